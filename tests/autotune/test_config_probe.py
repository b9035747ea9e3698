"""tools/config_probe.py's CPU parts: the jobs it makes and writes (variants normalized against shape-only
inputs on the meta device) and writing winners into a table."""
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton

import kernels_src
from helion_kernels._variant import variant_id

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("config_probe", ROOT / "tools" / "config_probe.py")
probe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(probe)

SHAPE = {"M": 16, "N": 4096, "K": 4096}


def _entry(dtype, warps, shape=SHAPE):
    config = {"block_sizes": [16, 64, 256], "num_warps": warps}
    return {"op": "matmul", "dtype": dtype, "shape": shape, "specialization": {"dtype": dtype},
            "variant": variant_id("matmul", config, {"dtype": dtype}), "us": 20.0, "config": config}


def test_other_dtype_jobs_pair_entries_whose_configs_differ():
    table = {"entries": [_entry("bfloat16", 4), _entry("float16", 8), _entry("bfloat16", 4, {"M": 64}),
                         _entry("float16", 4, {"M": 64}), _entry("float32", 2)]}
    jobs = probe.other_dtype_jobs(table, ["matmul"])
    assert [(j["dtype"], j["shape"]["M"]) for j in jobs] == [("bfloat16", 16), ("float16", 16)]
    assert jobs[0]["variants"] == {"float16 config": table["entries"][1]["config"]}
    assert probe.other_dtype_jobs(table, ["softmax_fwd"]) == []


H200 = {"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H200", "triton": "3.6.0", "torch": "2.11.0",
        "tuned_at": "2026-11-24"}
H100 = {**H200, "device_name": "NVIDIA H100 80GB HBM3", "tuned_at": "2026-11-26"}


def _result(tuned_us, variant_us, label="w8", device=H200):
    config = {"block_sizes": [16, 64, 256], "num_warps": 8}
    return [{"op": "matmul", "dtype": "bfloat16", "shape": SHAPE, "times": {"tuned": [tuned_us + 1, tuned_us, tuned_us - 0.5],
             label: [variant_us + 2, variant_us, variant_us - 1]}, "notes": {}, "configs": {"tuned": {}, label: config},
             "device": device}]


def test_apply_writes_winners_beyond_the_gain_only(tmp_path):
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "probe" / "result.json"
    result_path.parent.mkdir()
    table = {**H200, "entries": [_entry("bfloat16", 4)]}
    table_path.write_text(json.dumps(table))
    result_path.write_text(json.dumps(_result(tuned_us=20.0, variant_us=19.8)))
    assert probe.apply(result_path, table_path, min_gain=0.03) == []
    assert json.loads(table_path.read_text()) == table
    result_path.write_text(json.dumps(_result(tuned_us=20.0, variant_us=15.0)))
    changed = probe.apply(result_path, table_path, min_gain=0.03)
    assert len(changed) == 1 and "20.00 -> 15.00" in changed[0]
    written = json.loads(table_path.read_text())
    entry = written["entries"][0]
    assert entry["config"]["num_warps"] == 8 and entry["us"] == 15.0
    assert entry["variant"] == variant_id("matmul", entry["config"], entry["specialization"]) != table["entries"][0]["variant"]
    assert {k: v for k, v in written.items() if k != "entries"} == H200
    assert [p.name for p in tmp_path.glob("*.json")] == ["sm_90.json"]


def test_a_static_winner_records_the_fastest_dynamic_config(tmp_path):
    """A winner that compiles reduction sizes in keeps the fastest probed config that does not as the
    entry's dynamic_config (what it runs at other sizes); a later dynamic winner drops it."""
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "probe" / "result.json"
    result_path.parent.mkdir()
    tuned = _entry("bfloat16", 4)
    table_path.write_text(json.dumps({**H200, "entries": [tuned]}))
    static = {**tuned["config"], "num_warps": 8, "static_reduction_sizes": True}
    dynamic = {**tuned["config"], "num_warps": 16, "static_reduction_sizes": False}
    row = _result(tuned_us=20.0, variant_us=15.0, label="static")[0]
    row["times"]["w16"] = [17.0, 17.0, 17.0]
    row["configs"] = {"tuned": tuned["config"], "static": static, "w16": dynamic}
    result_path.write_text(json.dumps([row]))
    assert len(probe.apply(result_path, table_path, min_gain=0.03)) == 1
    [entry] = json.loads(table_path.read_text())["entries"]
    assert entry["config"] == static and entry["dynamic_config"] == dynamic
    row["times"] = {"tuned": [20.0], "dynamic": [10.0]}
    row["configs"] = {"tuned": static, "dynamic": tuned["config"]}
    result_path.write_text(json.dumps([row]))
    assert len(probe.apply(result_path, table_path, min_gain=0.03)) == 1
    [entry] = json.loads(table_path.read_text())["entries"]
    assert entry["config"] == tuned["config"] and "dynamic_config" not in entry


def test_apply_writes_another_devices_winners_into_that_devices_table(tmp_path):
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "probe" / "result.json"
    result_path.parent.mkdir()
    table = {**H200, "entries": [{**_entry("bfloat16", 4), "baseline_us": {"eager": 30.0}}]}
    table_path.write_text(json.dumps(table))
    result_path.write_text(json.dumps(_result(tuned_us=20.0, variant_us=15.0, device=H100)))
    changed = probe.apply(result_path, table_path, min_gain=0.03)
    assert len(changed) == 1 and "sm_90-nvidia-h100-80gb-hbm3.json" in changed[0]
    assert json.loads(table_path.read_text()) == table
    device_table = json.loads((tmp_path / "sm_90-nvidia-h100-80gb-hbm3.json").read_text())
    assert {k: v for k, v in device_table.items() if k != "entries"} == H100
    [entry] = device_table["entries"]
    assert entry["config"]["num_warps"] == 8 and entry["us"] == 15.0 and "baseline_us" not in entry
    assert entry["variant"] == variant_id("matmul", entry["config"], entry["specialization"])


def test_entries_a_device_table_lacks_come_from_its_architectures_table(tmp_path):
    arch_path, device_path = tmp_path / "sm_90.json", tmp_path / "sm_90-nvidia-h100-80gb-hbm3.json"
    result_path = tmp_path / "probe" / "result.json"
    result_path.parent.mkdir()
    other = _entry("bfloat16", 2, {"M": 64, "N": 4096, "K": 4096})
    arch_path.write_text(json.dumps({**H200, "entries": [_entry("bfloat16", 4)]}))
    device_path.write_text(json.dumps({**H100, "entries": [other]}))
    merged = probe.with_siblings(device_path, json.loads(device_path.read_text()), H100)
    assert [e["shape"]["M"] for e in merged["entries"]] == [64, 16]
    on_h200 = probe.with_siblings(arch_path, json.loads(arch_path.read_text()), H200)  # the runtime's order there
    assert [(e["shape"]["M"], e["config"]["num_warps"]) for e in on_h200["entries"]] == [(16, 4), (64, 2)]
    result_path.write_text(json.dumps(_result(tuned_us=20.0, variant_us=15.0, device=H100)))
    changed = probe.apply(result_path, device_path, min_gain=0.03)
    assert len(changed) == 1 and "sm_90-nvidia-h100-80gb-hbm3.json" in changed[0]
    written = json.loads(device_path.read_text())["entries"]
    assert [(e["shape"]["M"], e["config"]["num_warps"]) for e in written] == [(16, 8), (64, 2)]
    assert json.loads(arch_path.read_text())["entries"] == [_entry("bfloat16", 4)]


def test_other_device_jobs_pair_entries_another_gpus_table_holds_differently(tmp_path):
    arch_path, device_path = tmp_path / "sm_90.json", tmp_path / "sm_90-nvidia-h100-80gb-hbm3.json"
    arch_path.write_text(json.dumps({**H200, "entries": [_entry("bfloat16", 4), _entry("bfloat16", 8, {"M": 64}),
                                                           _entry("float16", 4)]}))
    device_path.write_text(json.dumps({**H100, "entries": [_entry("bfloat16", 2), _entry("bfloat16", 8, {"M": 64})]}))
    table = probe.with_siblings(arch_path, json.loads(arch_path.read_text()), H200)
    jobs = probe.other_device_jobs(arch_path, table, H200, ["matmul"])
    assert [(j["dtype"], j["shape"]["M"], j["variants"]) for j in jobs] == [
        ("bfloat16", 16, {"other device's config": _entry("bfloat16", 2)["config"]})]
    assert probe.other_device_jobs(arch_path, table, H200, ["softmax_fwd"]) == []


def test_foreign_shape_jobs_time_the_other_gpus_entries_under_this_ones_nearest_config(tmp_path):
    arch_path, device_path = tmp_path / "sm_90.json", tmp_path / "sm_90-nvidia-h100-80gb-hbm3.json"
    own = {**H200, "entries": [_entry("bfloat16", 4), _entry("bfloat16", 8, {**SHAPE, "M": 64}),
                               _entry("float16", 4)]}
    arch_path.write_text(json.dumps(own))
    device_path.write_text(json.dumps({**H100, "entries": [
        _entry("bfloat16", 2), _entry("bfloat16", 2, {**SHAPE, "M": 48}), _entry("float32", 2, {**SHAPE, "M": 48})]}))
    table = probe.with_siblings(arch_path, own, H200)
    jobs = probe.foreign_shape_jobs(own, table, ["matmul"])
    nearest = f"this device's nearest entry's config ({json.dumps({**SHAPE, 'M': 64})})"
    assert jobs == [{"op": "matmul", "dtype": "bfloat16", "shape": {**SHAPE, "M": 48},
                     "variants": {nearest: _entry("bfloat16", 8)["config"]}}]
    assert probe.foreign_shape_jobs(own, table, ["softmax_fwd"]) == []


def test_a_probe_of_a_new_suite_shape_adds_its_entry(tmp_path):
    """A job with "from_shape" times that entry's config at a shape no table holds; a winner becomes
    a new entry there, and the entry it started from stays as it was."""
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "probe" / "result.json"
    result_path.parent.mkdir()
    start = _entry("bfloat16", 4)
    table_path.write_text(json.dumps({**H200, "entries": [start]}))
    new_shape = {"M": 32, "N": 4096, "K": 4096}
    row = _result(tuned_us=20.0, variant_us=15.0)[0]
    row.update(shape=new_shape, specialization={"dtype": "bfloat16"}, configs={"tuned": start["config"], "w8": {
        **start["config"], "num_warps": 8}})
    result_path.write_text(json.dumps([row]))
    row_slow = {**row, "times": {"tuned": [20.0], "w8": [19.9]}}
    (result_path.parent / "slow.json").write_text(json.dumps([row_slow]))
    assert probe.apply(result_path.parent / "slow.json", table_path, min_gain=0.03) == []
    changed = probe.apply(result_path, table_path, min_gain=0.03)
    assert len(changed) == 1 and '"M": 32' in changed[0]
    entries = json.loads(table_path.read_text())["entries"]
    assert len(entries) == 2 and start in entries
    [added] = [e for e in entries if e["shape"] == new_shape]
    assert added["config"]["num_warps"] == 8 and added["us"] == 15.0 and added["specialization"] == {"dtype": "bfloat16"}
    assert added["variant"] == variant_id("matmul", added["config"], added["specialization"])


def test_flag_step_jobs_flip_each_per_loop_and_whole_kernel_flag_alone():
    peeled = {**_entry("bfloat16", 4), "config": {"block_sizes": [16, 64, 256], "range_peel_tails": [False, True],
                                                  "tile_reversals": [False], "num_warps": 4, "reload_rows": False}}
    constant = {**_entry("float16", 8), "config": {"num_warps": 8, "constexpr_conditions": True}}
    table = {"entries": [peeled, constant]}
    job, other = probe.flag_step_jobs(table, ["matmul"])
    assert (job["op"], job["dtype"], job["shape"]) == ("matmul", "bfloat16", SHAPE)
    assert job["variants"] == {"range_peel_tails[0] True": {"range_peel_tails": [True, True]},
                               "range_peel_tails[1] False": {"range_peel_tails": [False, False]},
                               "tile_reversals[0] True": {"tile_reversals": [True]},
                               "reload_rows True": {"reload_rows": True},
                               "constexpr_conditions True": {"constexpr_conditions": True}}
    assert other["variants"] == {"constexpr_conditions False": {"constexpr_conditions": False}}
    assert probe.flag_step_jobs(table, ["softmax_fwd"]) == []
    (only,) = probe.flag_step_jobs(table, ["matmul"], knobs=["reload_rows", "tile_reversals"])
    assert only["variants"] == {"tile_reversals[0] True": {"tile_reversals": [True]},
                                "reload_rows True": {"reload_rows": True}}


def test_the_constexpr_conditions_step_is_kept_only_where_the_kernel_offers_it():
    """The RMSNorm backward branches on `programs == 1` (a run-time condition): its entries keep the
    step; the softmax forward has no such condition and normalizes it away."""
    entries = [_shipped_entry("rms_norm_bwd", "bfloat16", {"M": 16384, "N": 4096}),
               _shipped_entry("softmax_fwd", "bfloat16", {"M": 4096, "N": 131072})]
    table = {"entries": entries}
    kept, _ = probe.distinct_jobs(table, probe.flag_step_jobs(table, ["rms_norm_bwd", "softmax_fwd"]))
    steps = {job["op"]: set(job["variants"]) for job in kept}
    assert "constexpr_conditions True" in steps["rms_norm_bwd"]
    assert "constexpr_conditions True" not in steps.get("softmax_fwd", set())


def test_knob_step_jobs_step_each_integer_knob_one_notch_alone():
    config = {"block_sizes": [16, 64], "num_warps": 4, "num_stages": 3, "range_unroll_factors": [0],
              "tile_reversals": [False], "pid_type": "flat", "split_rows": True}
    table = {"entries": [{**_entry("bfloat16", 4), "config": config}, _entry("float16", 8)]}
    jobs = probe.knob_step_jobs(table, ["matmul"])
    job = jobs[0]
    assert len(jobs) == 2 and (job["op"], job["dtype"], job["shape"]) == ("matmul", "bfloat16", SHAPE)
    assert job["variants"] == {
        "block_sizes[0] 8": {"block_sizes": [8, 64]}, "block_sizes[0] 32": {"block_sizes": [32, 64]},
        "block_sizes[1] 32": {"block_sizes": [16, 32]}, "block_sizes[1] 128": {"block_sizes": [16, 128]},
        "num_stages 2": {"num_stages": 2}, "num_stages 4": {"num_stages": 4},
        "num_warps 2": {"num_warps": 2}, "num_warps 8": {"num_warps": 8},
        "range_unroll_factors[0] 1": {"range_unroll_factors": [1]}}
    assert probe.knob_step_jobs(table, ["bmm"]) == []
    (only_warps, _) = probe.knob_step_jobs(table, ["matmul"], ["num_warps"])
    assert only_warps["variants"] == {"num_warps 2": {"num_warps": 2}, "num_warps 8": {"num_warps": 8}}


def test_the_jobs_command_keeps_the_entries_match_names(tmp_path):
    entries = [_shipped_entry("softmax_bwd", dtype, {"M": 256, "N": 262144}) for dtype in ("bfloat16", "float32")]
    table_path = tmp_path / "sm_90.json"
    table_path.write_text(json.dumps({"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H200", "entries": entries}))
    out = tmp_path / "jobs.json"
    probe.main(["jobs", "--knob-steps", "softmax_bwd", "--knobs", "num_warps,piece_tiles", "--match", "float32",
                "--table", str(table_path), "--out", str(out)])
    (job,) = json.loads(out.read_text())
    assert (job["dtype"], job["shape"]) == ("float32", {"M": 256, "N": 262144})
    warps = entries[1]["config"]["num_warps"]
    steps = {f"num_warps {warps // 2}", f"num_warps {warps * 2}", "piece_tiles 1", "piece_tiles 4"}
    assert steps - {f"num_warps {warps * 2}"} <= set(job["variants"]) <= steps


def test_variants_that_normalize_to_one_config_are_timed_once():
    notes = {}
    configs = {"tuned": {"num_warps": 4}, "a": {"num_warps": 8}, "b": {"num_warps": 4}, "c": {"num_warps": 8}}
    assert probe.distinct_configs(configs, notes) == {"tuned": {"num_warps": 4}, "a": {"num_warps": 8}}
    assert notes == {"b": "the same config as tuned's", "c": "the same config as a's"}


def _shipped_entry(op, dtype, shape):
    table = json.loads((ROOT / "tuned_configs" / "sm_90.json").read_text())
    return next(e for e in table["entries"] if (e["op"], e["dtype"], e["shape"]) == (op, dtype, shape))


def test_written_jobs_leave_out_the_variants_time_would_not_run():
    entry = _shipped_entry("matmul", "bfloat16", SHAPE)
    warps = entry["config"]["num_warps"]
    other_warps = 8 if warps == 4 else 4
    table = {"entries": [entry]}
    jobs = [{"op": "matmul", "dtype": "bfloat16", "shape": SHAPE,
             "variants": {"as tuned": {"num_warps": warps}, "other warps": {"num_warps": other_warps},
                          "other warps again": {"num_warps": other_warps}, "three warps": {"num_warps": 3}}},
            {"op": "matmul", "dtype": "bfloat16", "shape": SHAPE, "variants": {"as tuned": {}}}]
    kept, left_out = probe.distinct_jobs(table, jobs)
    assert kept == [{**jobs[0], "variants": {"other warps": {"num_warps": other_warps}}}]
    assert set(left_out[0]) == {"as tuned", "other warps again", "three warps"}
    assert left_out[0]["three warps"].startswith("rejected") and set(left_out[1]) == {"as tuned"}


def test_the_jobs_command_writes_the_flag_steps_time_would_run(tmp_path):
    entry = _shipped_entry("softmax_fwd", "bfloat16", {"M": 4096, "N": 131072})
    table_path = tmp_path / "sm_90.json"
    table_path.write_text(json.dumps({"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H200", "entries": [entry]}))
    out = tmp_path / "jobs.json"
    probe.main(["jobs", "--flag-steps", "softmax_fwd", "--table", str(table_path), "--out", str(out)])
    (job,) = json.loads(out.read_text())
    table = probe.with_siblings(table_path, json.loads(table_path.read_text()),
                                {"arch": "sm_90", "device_name": "NVIDIA H200"})
    assert [job] == probe.distinct_jobs(table, probe.flag_step_jobs(table, ["softmax_fwd"]))[0]
    config = entry["config"]
    flags = sum(len(v) if isinstance(v, list) and all(isinstance(f, bool) for f in v) else isinstance(v, bool)
                for v in config.values() if v != [])
    assert 0 < len(job["variants"]) <= flags + 1  # and constexpr_conditions, offered or not
    out_both = tmp_path / "both.json"
    probe.main(["jobs", "--flag-steps", "softmax_fwd", "--knob-steps", "softmax_fwd", "--table", str(table_path),
                "--knobs", "num_warps,range_peel_tails,online_softmax", "--out", str(out_both)])
    (both,) = json.loads(out_both.read_text())
    flipped = {label for label in job["variants"] if label.startswith(("range_peel_tails[", "online_softmax "))}
    assert flipped and set(both["variants"]) == flipped | {f"num_warps {w}" for w in
                                                           (config["num_warps"] // 2, config["num_warps"] * 2)}


@pytest.mark.parametrize("op", [spec.name for spec in kernels_src.ALL_OPS])
def test_shape_only_inputs_bind_as_drawn_ones_do(op):
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    shape = min(spec.shapes, key=lambda s: math.prod(v for v in s.values() if not isinstance(v, bool)))
    bindings = []
    for device in ("meta", "cpu"):
        spec.kernel.reset()
        bindings.append(spec.kernel.bind(spec.make_inputs(shape, spec.dtypes[0], device, 0)))
    meta, drawn = bindings
    assert meta.specialization_key() == drawn.specialization_key()
    default = drawn.config_spec.default_config()
    assert meta.config_spec.normalize(default) == drawn.config_spec.normalize(default)


def _facts(*spills):
    return [{"registers": 128, "spill_stores": stores, "spill_loads": loads} for stores, loads in spills]


def test_variants_that_spill_more_are_left_out(monkeypatch):
    import register_snapshot  # beside config_probe.py, which puts tools/ on the path

    entry = _entry("bfloat16", 4)
    facts = {4: _facts((8, 8), (0, 0)), 8: _facts((4, 10), (0, 0)), 2: _facts((8, 8), (0, 4)),
             16: "error: ptxas failed", 1: _facts((8, 9))}  # one kernel, spilling more than the worst of two
    monkeypatch.setattr(register_snapshot, "kernel_facts", lambda job: facts[job["config"]["num_warps"]])
    jobs = [{"op": "matmul", "dtype": "bfloat16", "shape": SHAPE,
             "variants": {f"{warps} warps": {"num_warps": warps} for warps in (8, 2, 16, 1)}}]
    kept, lines = probe.spill_growth_left_out({"entries": [entry]}, jobs)
    assert kept == [{**jobs[0], "variants": {"8 warps": {"num_warps": 8}}}]  # fewer bytes spilled in all
    assert [line.split("} ", 1)[1] for line in lines] == [
        "2 warps kernel 1: spill_loads 0 -> 4", f"16 warps: {facts[4]} -> error: ptxas failed",
        f"1 warps: {facts[4]} -> {facts[1]}"]
    facts.update({32: _facts((4, 4), (0, 0), (0, 0)), 64: _facts((0, 0), (10, 10), (0, 0))})
    other_forms = [{**jobs[0], "variants": {f"{warps} warps": {"num_warps": warps} for warps in (32, 64)}}]
    kept, lines = probe.spill_growth_left_out({"entries": [entry]}, other_forms)
    # three kernels against two: compared by the most-spilling kernel (16 bytes under the entry's)
    assert kept == [{**jobs[0], "variants": {"32 warps": {"num_warps": 32}}}] and len(lines) == 1
    facts[4] = "error: ptxas failed"  # the entry's own config fails: its variants stay to be timed
    assert probe.spill_growth_left_out({"entries": [entry]}, jobs)[0] == jobs


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_the_jobs_command_filters_a_jobs_file_by_ptxas_spills(tmp_path):
    shape = {"M": 65536, "N": 4096}
    entry = _shipped_entry("rms_norm_bwd", "float32", shape)
    rows = entry["config"]["block_sizes"][0]
    table_path = tmp_path / "sm_90.json"
    table_path.write_text(json.dumps({"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H200", "entries": [entry]}))
    jobs_path, out = tmp_path / "jobs.json", tmp_path / "kept.json"
    jobs = [{"op": "rms_norm_bwd", "dtype": "float32", "shape": shape,
             "variants": {"rows x8": {"block_sizes": [rows * 8, *entry["config"]["block_sizes"][1:]]},
                          "rows / 2": {"block_sizes": [rows // 2, *entry["config"]["block_sizes"][1:]]}}}]
    jobs_path.write_text(json.dumps(jobs))
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "config_probe.py"), "jobs", str(jobs_path),
                           "--no-more-spills", "--table", str(table_path), "--out", str(out)],
                          cwd=ROOT, env={**os.environ, "TRITON_INTERPRET": "0"}, capture_output=True, text=True,
                          timeout=600)  # cross-compiling needs Triton's compiling library, not the interpreter's
    assert done.returncode == 0, done.stderr[-3000:]
    assert "left out: rms_norm_bwd float32" in done.stdout and "rows x8 kernel 0: " in done.stdout
    assert json.loads(out.read_text()) == [{**jobs[0], "variants": {"rows / 2": jobs[0]["variants"]["rows / 2"]}}]


def test_dtype_variant_jobs_start_from_the_variants_config_and_apply_into_dtype_configs(tmp_path):
    """--dtypes: the knob steps of the entries' variants for a dtypes key run from the variant's
    config (the entry's with its dtype_configs for the key) on inputs of those dtypes, only where
    the op generates that variant; `apply` records a winner as the entry's dtype_configs for the key,
    leaving its own config, variant and time as they were."""
    entry = _shipped_entry("rms_norm_bwd", "bfloat16", {"M": 4096, "N": 768})
    assert entry["dtype_configs"]["grad_out=float32"] == {"range_num_stages": [1, 1, 1]}
    table = {**H200, "entries": [entry, _shipped_entry("rms_norm_bwd", "float32", {"M": 4096, "N": 768})]}
    jobs = probe.knob_step_jobs(table, ["rms_norm_bwd"], ["num_warps"], "grad_out=float32")
    (job,) = jobs
    assert (job["dtype"], job["dtypes"]) == ("bfloat16", "grad_out=float32")
    kept, _ = probe.distinct_jobs(table, jobs)
    assert kept and "with grad_out=float32" in probe.job_label(job)
    args = probe.job_inputs(probe._spec("rms_norm_bwd"), job, "meta")
    assert (args[0].dtype, args[1].dtype) == (torch.float32, torch.bfloat16)
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "result.json"
    table_path.write_text(json.dumps(table))
    tuned = probe.tuned_config(entry, "grad_out=float32")
    faster = {**tuned, "num_warps": tuned["num_warps"] * 2}
    result_path.write_text(json.dumps([{"op": "rms_norm_bwd", "dtype": "bfloat16", "shape": entry["shape"],
                                        "dtypes": "grad_out=float32", "times": {"tuned": [10.0], "w": [8.0]},
                                        "notes": {}, "configs": {"tuned": tuned, "w": faster}, "device": H200}]))
    (line,) = probe.apply(result_path, table_path, min_gain=0.03)
    assert "with grad_out=float32" in line and "10.00 -> 8.00" in line
    written = json.loads(table_path.read_text())["entries"][0]
    assert written["dtype_configs"]["grad_out=float32"] == {"range_num_stages": [1, 1, 1],
                                                            "num_warps": tuned["num_warps"] * 2}
    assert {k: written[k] for k in ("config", "variant", "us")} == {k: entry[k] for k in ("config", "variant", "us")}
    others = {key: overrides for key, overrides in entry["dtype_configs"].items() if key != "grad_out=float32"}
    assert {key: overrides for key, overrides in written["dtype_configs"].items() if key != "grad_out=float32"} == others


def test_a_new_entry_config_keeps_its_recorded_dtype_variants_configs(tmp_path):
    """`apply` of a winner of the entry's own dtypes rewrites its dtype_configs against the new
    config: each recorded variant keeps the config it was recorded with (the new config's changed
    knobs written back as overrides, an override the new config now holds dropped)."""
    entry = _shipped_entry("rms_norm_bwd", "bfloat16", {"M": 4096, "N": 768})
    recorded = {key: probe.tuned_config(entry, key) for key in entry["dtype_configs"]}
    table_path, result_path = tmp_path / "sm_90.json", tmp_path / "result.json"
    table_path.write_text(json.dumps({**H200, "entries": [entry]}))
    tuned = entry["config"]
    winner = {**tuned, "num_warps": tuned["num_warps"] * 2, "range_num_stages": [1, 1, 1]}
    result_path.write_text(json.dumps([{"op": "rms_norm_bwd", "dtype": "bfloat16", "shape": entry["shape"],
                                        "times": {"tuned": [10.0], "w": [8.0]}, "notes": {},
                                        "configs": {"tuned": tuned, "w": winner}, "device": H200}]))
    probe.apply(result_path, table_path, min_gain=0.03)
    written = json.loads(table_path.read_text())["entries"][0]
    assert written["config"] == winner
    assert {key: probe.tuned_config(written, key) for key in written["dtype_configs"]} == recorded
    assert written["dtype_configs"]["grad_out=float32"] == {"num_warps": tuned["num_warps"]}


def test_dtype_variant_winners_at_a_new_shape_add_the_entry_they_started_from(tmp_path):
    """Winners of two dtype variants of a job that started from another shape's entry ("from_shape")
    make one new entry: that entry's config and specialization at the new shape (so its own dtype's
    calls run as before), with both winners in its dtype_configs. Without "from_shape" such a row
    cannot say which entry it varied, and apply refuses it."""
    start = _shipped_entry("rms_norm_bwd", "bfloat16", {"M": 1, "N": 4096})
    table_path = tmp_path / "sm_90.json"
    table_path.write_text(json.dumps({**H200, "entries": [start]}))
    new_shape = {"M": 64, "N": 4096}
    rows = [{"op": "rms_norm_bwd", "dtype": "bfloat16", "shape": new_shape, "dtypes": key, "from_shape": start["shape"],
             "times": {"tuned": [12.0], "host": [11.0]}, "notes": {}, "device": H200,
             "configs": {"tuned": probe.tuned_config(start, key),
                         "host": {**probe.tuned_config(start, key), "finish_dweight": "host", "num_warps": warps}}}
            for key, warps in (("weight=float32", 2), ("grad_out=float32,weight=float32", 4))]
    (tmp_path / "result.json").write_text(json.dumps(rows))
    assert len(probe.apply(tmp_path / "result.json", table_path, min_gain=0.03)) == 2
    entries = json.loads(table_path.read_text())["entries"]
    assert start in entries and len(entries) == 2
    [added] = [e for e in entries if e["shape"] == new_shape]
    assert {k: added[k] for k in ("config", "specialization", "variant")} == {
        k: start[k] for k in ("config", "specialization", "variant")} and "us" not in added
    for row in rows:
        assert probe.tuned_config(added, row["dtypes"]) == row["configs"]["host"]
    table_path.write_text(json.dumps({**H200, "entries": [start]}))
    (tmp_path / "orphan.json").write_text(json.dumps([{k: v for k, v in rows[0].items() if k != "from_shape"}]))
    with pytest.raises(SystemExit, match="the result names none"):
        probe.apply(tmp_path / "orphan.json", table_path, min_gain=0.03)
