"""Retune acceptance logic, report, and the tune/retune command line on fake ops."""
import json

from autotune_fakes import FAKE_OPS_SOURCE, VIRTUAL_TIMER, FakeConfigSpec, bowl_cost

from build_tools.autotune import cli
from build_tools.autotune.retune import (EXIT_CHANGED, EXIT_UNCHANGED, apply_decisions, decide, hidden_entries,
                                         shipped_entries)
from build_tools.autotune.run import RunSummary
from build_tools.autotune.table import key_of

SHAPE = {"N": 64}


def record(config, us, noise=0.01, incumbent=None):
    tuning = {"noise": noise}
    if incumbent is not None:
        tuning["incumbent"] = incumbent
    return {"op": "a", "dtype": "bfloat16", "shape": SHAPE, "config": config, "us": us, "tuning": tuning}


def shipped(config, us=100.0):
    return {"op": "a", "dtype": "bfloat16", "shape": SHAPE, "config": config, "us": us}


def incumbent(config, us, noise=0.01, error=None):
    return {"config": config, "us": us, "noise": noise, "error": error}


OLD, NEW = {"num_warps": 4}, {"num_warps": 8}


def test_clear_win_is_accepted():
    d = decide(record(NEW, 80.0, incumbent=incumbent(OLD, 100.0)), shipped(OLD), min_gain=0.02)
    assert d.accepted and d.speedup == 1.25


def test_win_inside_the_noise_is_rejected():
    d = decide(record(NEW, 95.0, incumbent=incumbent(OLD, 100.0, noise=0.08)), shipped(OLD), min_gain=0.02)
    assert not d.accepted and "noise" in d.reason
    d = decide(record(NEW, 99.0, noise=0.0, incumbent=incumbent(OLD, 100.0, noise=0.0)), shipped(OLD), 0.02)
    assert not d.accepted


def test_slower_or_identical_configs_are_rejected():
    assert not decide(record(NEW, 120.0, incumbent=incumbent(OLD, 100.0)), shipped(OLD), 0.02).accepted
    assert not decide(record(OLD, 50.0, incumbent=incumbent(OLD, 100.0)), shipped(OLD), 0.02).accepted


def test_new_entries_and_broken_shipped_configs_are_replaced():
    assert decide(record(NEW, 80.0), None, 0.02).accepted
    broken = incumbent(OLD, None, error="wrong output: 3/64 elements off")
    d = decide(record(NEW, 500.0, incumbent=broken), shipped(OLD), 0.02)
    assert d.accepted and "fails" in d.reason


def test_an_accepted_entry_keeps_the_shipped_times_of_peers_it_did_not_measure():
    table = {"entries": [{**shipped(OLD), "specialization": {}, "variant": "v0",
                          "baseline_us": {"eager": 300.0, "compile": 200.0}}]}
    new = {**record(NEW, 80.0, incumbent=incumbent(OLD, 100.0)), "specialization": {}, "variant": "v1"}
    key = key_of(table["entries"][0])
    decision = decide(new, table["entries"][0], 0.02)

    unmeasured = {**new, "baseline_us": {"eager": None, "compile": None}}
    (entry,) = apply_decisions({}, table, {key: unmeasured}, {key: decision})["entries"]
    assert entry["variant"] == "v1" and entry["baseline_us"] == {"eager": 300.0, "compile": 200.0}

    failed = {**new, "baseline_us": {"eager": 310.0, "compile": None}, "baseline_notes": {"compile": "failed"}}
    (entry,) = apply_decisions({}, table, {key: failed}, {key: decision})["entries"]
    assert entry["baseline_us"] == {"eager": 310.0, "compile": None}


def tune_cli(tmp_path, command, table, *extra):
    return cli.main([
        command, "--arch", "test_arch", "--device", "cpu", "--op-source", FAKE_OPS_SOURCE,
        "--timer", VIRTUAL_TIMER, "--ops", "fake_scale", "--out", str(table), "--work-dir",
        str(tmp_path / command), "--in-process", "--no-baselines", "--progress", "off",
        "--max-evals", "150", "--generations", "4", *extra,
    ])


def test_tune_then_retune_through_the_command_line(tmp_path):
    table = tmp_path / "tuned" / "test_arch.json"
    assert tune_cli(tmp_path, "tune", table) == 0
    tuned = json.loads(table.read_text())
    assert len(tuned["entries"]) == 3

    # Nothing better exists: retune keeps the table and says so.
    assert tune_cli(tmp_path, "retune", table, "--no-generate") == EXIT_UNCHANGED
    assert json.loads(table.read_text()) == tuned

    # Ship a slow config for one shape: retune replaces exactly that entry.
    slow = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    tuned["entries"][0]["config"] = slow
    table.write_text(json.dumps(tuned))
    assert tune_cli(tmp_path, "retune", table, "--no-generate") == EXIT_CHANGED
    retuned = json.loads(table.read_text())
    assert retuned["entries"][0]["config"] != slow
    assert retuned["entries"][0]["us"] == bowl_cost(FakeConfigSpec(), retuned["entries"][0]["config"])
    assert retuned["entries"][1:] == tuned["entries"][1:]
    report = (tmp_path / "retune" / "retune-report.md").read_text()
    assert report.count("**accepted**") == 1 and report.count("kept: same config") == 2


def test_what_ships_on_a_device_is_its_table_layered_over_the_other_tables_of_its_arch(tmp_path):
    def table(name, arch, device, configs):
        (tmp_path / name).write_text(json.dumps({"schema": 1, "arch": arch, "device_name": device, "entries": [
            {"op": "a", "dtype": "bfloat16", "shape": {"N": n}, "config": {"v": v}} for n, v in configs.items()]}))

    table("sm_90.json", "sm_90", "NVIDIA H200", {1: "h200", 2: "h200", 3: "h200"})
    table("sm_90-b.json", "sm_90", "B", {2: "b", 3: "b"})
    table("sm_90-h100.json", "sm_90", "NVIDIA H100", {3: "h100"})
    table("sm_80.json", "sm_80", "NVIDIA H100", {4: "a100"})
    shipped = shipped_entries(tmp_path / "sm_90-h100.json", "sm_90", "NVIDIA H100")
    assert {e["shape"]["N"]: e["config"]["v"] for e in shipped.values()} == {1: "h200", 2: "b", 3: "h100"}
    shipped = shipped_entries(tmp_path / "sm_90-new.json", "sm_90", "B")
    assert {e["shape"]["N"]: e["config"]["v"] for e in shipped.values()} == {1: "h200", 2: "b", 3: "b"}
    # a retune also starts from the other tables' configs at the shapes the device's own table holds
    hidden = hidden_entries(tmp_path / "sm_90-h100.json", "sm_90", "NVIDIA H100")
    assert [(e["shape"]["N"], e["config"]["v"]) for e in hidden] in ([(3, "b")], [(3, "h200")])
    assert hidden_entries(tmp_path / "sm_90-new.json", "sm_90", "B") == []


def test_a_device_retune_decides_against_what_ships_there_and_writes_only_its_table(tmp_path):
    """The arch table belongs to another GPU; this device's table holds one entry (slow). Only the
    entries slower than what this device runs today change, and only in this device's table."""
    arch_table = tmp_path / "tuned" / "test_arch.json"
    assert tune_cli(tmp_path, "tune", arch_table) == 0
    tuned = json.loads(arch_table.read_text())
    slow = {"block_sizes": [16, 16], "num_warps": 1, "num_stages": 1, "indexing": "pointer"}
    tuned["device_name"] = "Other GPU"
    tuned["entries"][0]["config"] = slow
    arch_table.write_text(json.dumps(tuned))
    device_table = tmp_path / "tuned" / "test_arch-cpu.json"
    device_table.write_text(json.dumps({**tuned, "device_name": "cpu (Triton interpreter)",
                                        "entries": [{**tuned["entries"][1], "config": slow}]}))

    assert tune_cli(tmp_path, "retune", device_table, "--no-generate") == EXIT_CHANGED
    assert json.loads(arch_table.read_text()) == tuned
    retuned = json.loads(device_table.read_text())
    assert retuned["arch"] == "test_arch" and retuned["device_name"] == "cpu (Triton interpreter)"
    assert [key_of(e) for e in retuned["entries"]] == [key_of(e) for e in tuned["entries"][:2]]
    assert all(e["config"] != slow for e in retuned["entries"])
    report = (tmp_path / "retune" / "retune-report.md").read_text()
    assert report.count("**accepted**") == 2 and report.count("kept: same config") == 1


def test_incomplete_tune_exits_nonzero(tmp_path):
    table = tmp_path / "t.json"
    assert tune_cli(tmp_path, "tune", table, "--budget-s", "0") == cli.EXIT_INCOMPLETE
    assert json.loads(table.read_text())["entries"] == []


def test_report_lists_failures():
    from build_tools.autotune.retune import report_markdown

    summary = RunSummary(planned=1, failed={"a|bf16|{}": "RuntimeError: boom"})
    assert "RuntimeError: boom" in report_markdown("sm_90", "gpu", {}, summary)


def test_the_default_evaluation_budget_covers_both_search_phases():
    args = cli.build_parser().parse_args(["retune", "--arch", "sm_90"])
    settings = cli._settings(args, workers=13)
    assert settings.population == 13
    assert settings.max_evaluations == settings.evaluations_for_both_phases() > 13 * (settings.generations + 1)
    explicit = cli._settings(cli.build_parser().parse_args(["retune", "--arch", "sm_90", "--max-evals", "20"]), 13)
    assert explicit.max_evaluations == 20


def test_a_larger_evaluation_budget_goes_to_more_pattern_rounds():
    settings = cli._settings(cli.build_parser().parse_args(["retune", "--arch", "sm_90", "--max-evals", "400"]), 13)
    evolution = 13 * (settings.generations + 1)
    assert settings.max_evaluations == 400
    assert settings.pattern_rounds * settings.pattern_batch >= 400 - evolution > (settings.pattern_rounds - 1) * settings.pattern_batch
    default = cli._settings(cli.build_parser().parse_args(["retune", "--arch", "sm_90"]), 13)
    small = cli._settings(cli.build_parser().parse_args(["retune", "--arch", "sm_90", "--max-evals", "20"]), 13)
    assert small.pattern_rounds == default.pattern_rounds
