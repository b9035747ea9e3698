"""Dispatcher logic on synthetic tables: table choice, nearest shape, exact keys, cache, notes."""
import json

import pytest
import torch

from helion_kernels._dispatch import Dispatcher, log_distance
from helion_kernels._tables import load_table, load_tables
from helion_kernels._variant import dtype_variant_id, variant_id

CPU = torch.device("cpu")


class FakeRegistry:
    """Registry stand-in: every variant id in `known` has a launcher that returns its own id."""

    def __init__(self, known, exact_keys=(), key_weights=None, reduction_keys=()):
        self.known = set(known)
        self.exact = exact_keys
        self.weights = key_weights
        self.reduction_keys = reduction_keys

    def launchers(self, op):
        return {vid: (lambda vid=vid: vid) for vid in self.known}

    def op_info(self, op):
        return {"exact_keys": list(self.exact), "key_weights": self.weights,
                "reduction_keys": list(self.reduction_keys)}


def entry(op, shape, vid, dtype="bfloat16"):
    return {"op": op, "dtype": dtype, "shape": shape, "config": {"v": vid}, "variant": vid}


def write_table(folder, name, arch, entries, device_name=None):
    path = folder / name
    path.write_text(json.dumps({"schema": 1, "arch": arch, "device_name": device_name, "entries": entries}))
    return path


def dispatcher(folder, known, exact_keys=(), arch="sm_90", device_name=None, monkeypatch=None, key_weights=None):
    monkeypatch.setenv("HK_ARCH", arch)
    if device_name:
        monkeypatch.setenv("HK_DEVICE_NAME", device_name)
    return Dispatcher(FakeRegistry(known, exact_keys, key_weights), lambda: load_tables_from(folder))


def load_tables_from(folder):
    return [load_table(p) for p in sorted(folder.glob("*.json"))]


def select(d, shape, op="rms_norm_fwd", dtype=torch.bfloat16):
    return d.select(op, CPU, dtype, tuple(shape), tuple(shape.values()))


def test_exact_shape_wins_over_others(tmp_path, monkeypatch):
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("rms_norm_fwd", {"M": 8, "N": 1024}, "a"),
                                                  entry("rms_norm_fwd", {"M": 8, "N": 4096}, "b")])
    d = dispatcher(tmp_path, "ab", monkeypatch=monkeypatch)
    decision = select(d, {"M": 8, "N": 4096})
    assert decision.variant == "b" and decision.launcher() == "b"
    assert "exact tuned shape" in decision.reason and decision.table == "sm_90.json"


@pytest.mark.parametrize("n, expected", [(1500, "a"), (3000, "b"), (100000, "c"), (1, "a")])
def test_nearest_shape_in_log_space(tmp_path, monkeypatch, n, expected):
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("rms_norm_fwd", {"M": 64, "N": 1024}, "a"),
                                                  entry("rms_norm_fwd", {"M": 64, "N": 4096}, "b"),
                                                  entry("rms_norm_fwd", {"M": 64, "N": 65536}, "c")])
    d = dispatcher(tmp_path, "abc", monkeypatch=monkeypatch)
    decision = select(d, {"M": 3, "N": n})
    candidates = {"a": 1024, "b": 4096, "c": 65536}
    nearest = min(candidates, key=lambda v: log_distance({"M": 64, "N": candidates[v]}, {"M": 3, "N": n}))
    assert decision.variant == expected == nearest
    assert "nearest tuned shape" in decision.reason


@pytest.mark.parametrize("weights, expected", [(None, "rows"), ({"N": 4.0}, "row_length")])
def test_key_weights_scale_each_key_of_the_distance(tmp_path, monkeypatch, weights, expected):
    """16384 x 16384: 2 octaves of N from the 16384 x 4096 entry, 3 octaves of M from 2048 x 16384;
    weighing N 4x makes the entry with the same row length the nearest."""
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("rms_norm_fwd", {"M": 16384, "N": 4096}, "rows"),
                                                  entry("rms_norm_fwd", {"M": 2048, "N": 16384}, "row_length")])
    d = dispatcher(tmp_path, ["rows", "row_length"], key_weights=weights, monkeypatch=monkeypatch)
    assert select(d, {"M": 16384, "N": 16384}).variant == expected


@pytest.mark.parametrize("dynamic_config", [None, {"num_warps": 16, "reduction_loops": [None]}])
def test_static_variants_run_only_at_their_tuned_reduction_sizes(tmp_path, monkeypatch, dynamic_config):
    """An entry whose variant compiles the row length in answers every call near it, but only calls
    with its tuned row length run that variant; other lengths run its dynamic twin: the entry's
    `dynamic_config` where it has one, else its config with the flag off."""
    static = {"num_warps": 32, "static_reduction_sizes": True}
    raw = {**entry("softmax_bwd", {"M": 2048, "N": 32000}, "static"), "config": static, "specialization": {"s": 1}}
    if dynamic_config:
        raw["dynamic_config"] = dynamic_config
    twin_config = dynamic_config or {**static, "static_reduction_sizes": False}
    twin = variant_id("softmax_bwd", twin_config, {"s": 1})
    write_table(tmp_path, "sm_90.json", "sm_90", [raw, entry("softmax_bwd", {"M": 16384, "N": 1024}, "small")])
    monkeypatch.setenv("HK_ARCH", "sm_90")
    registry = FakeRegistry(["static", twin, "small"], key_weights={"N": 4.0}, reduction_keys=("N",))
    d = Dispatcher(registry, lambda: load_tables_from(tmp_path))
    for rows in (2048, 1, 4096):
        decision = select(d, {"M": rows, "N": 32000}, "softmax_bwd")
        assert decision.variant == "static" and decision.launcher() == "static" and decision.config == static
    for n in (32001, 50257, 16000):
        decision = select(d, {"M": 2048, "N": n}, "softmax_bwd")
        assert decision.variant == twin and decision.launcher() == twin
        assert decision.tuned_shape == {"M": 2048, "N": 32000} and decision.config == twin_config
        assert f"dynamic twin {twin}" in decision.reason
    assert select(d, {"M": 16384, "N": 1000}, "softmax_bwd").variant == "small"
    registry.known.discard(twin)
    d.reload()
    decision = select(d, {"M": 2048, "N": 32001}, "softmax_bwd")
    assert decision.variant == "static" and any("has no generated variant" in n for n in decision.notes)


def test_a_static_entry_needs_its_specialization(tmp_path):
    raw = {**entry("softmax_bwd", {"M": 8, "N": 8}, "static"), "config": {"static_reduction_sizes": True}}
    with pytest.raises(ValueError, match="dynamic twin"):
        load_table(write_table(tmp_path, "sm_90.json", "sm_90", [raw]))


def test_exact_keys_must_match(tmp_path, monkeypatch):
    write_table(tmp_path, "sm_90.json", "sm_90", [
        entry("attention_fwd", {"S": 128, "D": 64, "causal": False}, "d64"),
        entry("attention_fwd", {"S": 100000, "D": 128, "causal": False}, "d128"),
        entry("attention_fwd", {"S": 128, "D": 128, "causal": True}, "d128c")])
    d = dispatcher(tmp_path, ["d64", "d128", "d128c"], exact_keys=("D", "causal"), monkeypatch=monkeypatch)
    assert select(d, {"S": 128, "D": 128, "causal": False}, "attention_fwd").variant == "d128"
    assert select(d, {"S": 128, "D": 128, "causal": True}, "attention_fwd").variant == "d128c"
    missing = select(d, {"S": 128, "D": 80, "causal": False}, "attention_fwd")
    assert missing.launcher is None and "D=80" in missing.reason


def test_dtype_must_match(tmp_path, monkeypatch):
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("softmax_fwd", {"M": 4, "N": 4}, "h", "float16")])
    d = dispatcher(tmp_path, "h", monkeypatch=monkeypatch)
    assert select(d, {"M": 4, "N": 4}, "softmax_fwd", torch.float16).variant == "h"
    assert select(d, {"M": 4, "N": 4}, "softmax_fwd", torch.bfloat16).launcher is None


def test_device_name_refines_the_table(tmp_path, monkeypatch):
    shape = {"M": 8, "N": 8}
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("op", shape, "h100")], "NVIDIA H100 80GB HBM3")
    write_table(tmp_path, "sm_90_h200.json", "sm_90", [entry("op", shape, "h200")], "NVIDIA H200")
    for name, expected in (("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100")):
        d = dispatcher(tmp_path, ["h100", "h200"], device_name=name, monkeypatch=monkeypatch)
        assert select(d, shape, "op").variant == expected


H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def test_a_device_table_refines_the_arch_table_entry_by_entry(tmp_path, monkeypatch):
    """A device table holding one far shape (131072 columns, retuned on an H100) answers only the
    calls nearest it; an equal shape in it hides the arch table's entry on that device only."""
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("softmax_fwd", {"M": 16384, "N": 4096}, "arch4k"),
                                                  entry("softmax_fwd", {"M": 64, "N": 131072}, "arch128k")], H200)
    write_table(tmp_path, "sm_90-nvidia-h100-80gb-hbm3.json", "sm_90",
                [entry("softmax_fwd", {"M": 64, "N": 131072}, "h100_128k")], H100)
    known = ["arch4k", "arch128k", "h100_128k"]
    d = dispatcher(tmp_path, known, device_name=H100, monkeypatch=monkeypatch)
    near_4k = select(d, {"M": 16384, "N": 4096}, "softmax_fwd")
    assert near_4k.variant == "arch4k" and near_4k.table == "sm_90.json"
    assert near_4k.reason == f"sm_90.json (sm_90, {H200}): exact tuned shape"
    for n in (131072, 262144):
        far = select(d, {"M": 64, "N": n}, "softmax_fwd")
        assert far.variant == "h100_128k" and far.table == "sm_90-nvidia-h100-80gb-hbm3.json"
        assert far.reason.startswith(f"sm_90-nvidia-h100-80gb-hbm3.json (sm_90, {H100}): ")
    d = dispatcher(tmp_path, known, device_name=H200, monkeypatch=monkeypatch)
    far = select(d, {"M": 64, "N": 131072}, "softmax_fwd")
    assert far.variant == "arch128k" and far.table == "sm_90.json"


def test_a_device_entry_without_generated_variant_leaves_the_arch_tables_entry(tmp_path, monkeypatch):
    shape = {"M": 8, "N": 8}
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("op", shape, "arch")], H200)
    write_table(tmp_path, "sm_90-h100.json", "sm_90", [entry("op", shape, "gone")], H100)
    decision = select(dispatcher(tmp_path, ["arch"], device_name=H100, monkeypatch=monkeypatch), shape, "op")
    assert decision.variant == "arch" and decision.table == "sm_90.json"
    assert any(note.startswith("sm_90-h100.json: 1 entries") for note in decision.notes)


def test_default_table_for_unknown_arch_and_missing_ops(tmp_path, monkeypatch):
    write_table(tmp_path, "default.json", "default", [entry("op", {"M": 8, "N": 8}, "dflt"),
                                                      entry("other", {"M": 8, "N": 8}, "dflt2")])
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("op", {"M": 8, "N": 8}, "tuned")])
    d = dispatcher(tmp_path, ["dflt", "dflt2", "tuned"], arch="sm_80", monkeypatch=monkeypatch)
    decision = select(d, {"M": 8, "N": 8}, "op")
    assert decision.variant == "dflt" and decision.arch == "sm_80"
    assert any("no tuned table for architecture sm_80" in note for note in decision.notes)
    d = dispatcher(tmp_path, ["dflt", "dflt2", "tuned"], arch="sm_90", monkeypatch=monkeypatch)
    assert select(d, {"M": 8, "N": 8}, "op").variant == "tuned"
    assert select(d, {"M": 8, "N": 8}, "other").variant == "dflt2"


def test_entries_without_generated_variant_are_skipped(tmp_path, monkeypatch):
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("op", {"N": 8}, "gone"), entry("op", {"N": 4096}, "here")])
    d = dispatcher(tmp_path, ["here"], monkeypatch=monkeypatch)
    decision = select(d, {"N": 8}, "op")
    assert decision.variant == "here"
    assert any("no generated variant" in note for note in decision.notes)


def test_decision_is_cached_per_exact_key(tmp_path, monkeypatch):
    write_table(tmp_path, "sm_90.json", "sm_90", [entry("op", {"N": 8}, "a")])
    d = dispatcher(tmp_path, "a", monkeypatch=monkeypatch)
    calls = []
    resolve = d.resolve
    monkeypatch.setattr(d, "resolve", lambda *args: calls.append(args) or resolve(*args))
    first = select(d, {"N": 9}, "op")
    assert select(d, {"N": 9}, "op") is first and len(calls) == 1
    select(d, {"N": 10}, "op")
    assert len(calls) == 2


def test_table_without_variant_field_derives_it(tmp_path):
    raw = {"op": "op", "dtype": "float32", "shape": {"N": 3}, "config": {"num_warps": 4},
           "specialization": {"dtype": "float32"}}
    path = write_table(tmp_path, "t.json", "sm_80", [raw])
    (loaded,) = load_table(path).candidates("op", "float32")
    assert loaded.variant == variant_id("op", raw["config"], raw["specialization"])


def test_malformed_table_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "entries": []}')
    with pytest.raises(ValueError, match="bad.json"):
        load_table(bad)


def test_table_folder_override(tmp_path, monkeypatch):
    write_table(tmp_path, "x.json", "sm_75", [])
    monkeypatch.setenv("HK_TUNED_CONFIGS", str(tmp_path))
    assert [t.arch for t in load_tables()] == ["sm_75"]


def test_variant_id_is_canonical():
    a = variant_id("op", {"b": [1, 2], "a": 3}, {"x": (1,)})
    assert a == variant_id("op", {"a": 3, "b": (1, 2)}, {"x": [1]})
    assert len(a) == 12 and int(a, 16) >= 0
    assert a != variant_id("op", {"a": 4, "b": [1, 2]}, {"x": [1]})
    assert a != variant_id("op2", {"a": 3, "b": [1, 2]}, {"x": [1]})
    assert a != variant_id("op", {"a": 3, "b": [1, 2]}, {"x": [2]})


def test_api_calls_resolve_once_per_exact_key(monkeypatch, device):
    import helion_kernels as hk
    from helion_kernels._dispatch import DISPATCHER

    resolved = []
    resolve = DISPATCHER.resolve
    monkeypatch.setattr(DISPATCHER, "resolve", lambda *args: resolved.append(args) or resolve(*args))
    x = torch.randn(3, 1013, device=device)
    assert hk.explain(hk.softmax, x).uses_kernels
    monkeypatch.setattr(DISPATCHER, "_tables_loader", lambda: pytest.fail("tables were read again"))
    for _ in range(3):
        hk.softmax(torch.randn(3, 1013, device=device))
    assert [args[0] for args in resolved] == ["softmax_fwd"]


def test_variant_that_does_not_fit_falls_back_once(monkeypatch):
    from triton.runtime.errors import OutOfResources

    from helion_kernels import _plan
    from helion_kernels._dispatch import DISPATCHER, Decision

    calls = []

    def too_big(*args):
        calls.append("kernel")
        raise OutOfResources(300000, 232448, "shared memory")

    key = ("fake_op", CPU, torch.float32, (), (3,))
    monkeypatch.setitem(DISPATCHER._cache, key, Decision("fake_op", "sm_90", "float32", {"N": 3},
                                                          launcher=too_big, variant="abc"))
    for _ in range(2):
        assert _plan.launch("fake_op", ("N",), (3,), torch.ones(3), (5,), lambda v: v + 1) == 6
    assert calls == ["kernel"]
    decision = DISPATCHER._cache[key]
    assert decision.launcher is None and "does not fit" in decision.reason
    assert decision.variant == "abc"


def test_a_call_imports_only_its_ops_family():
    """The registry imports a generated family on the first question about one of its ops, so an
    op's first call defines only its own family's Triton kernels."""
    import subprocess
    import sys

    code = ("import sys; from helion_kernels._dispatch import DISPATCHER as d; "
            "assert d.registry.launchers('softmax_fwd') and d.registry.op_info('softmax_bwd'); "
            "print(sorted(m for m in sys.modules if m.startswith('helion_kernels._generated.')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["['helion_kernels._generated.softmax']"]


def test_entries_of_a_backend_the_device_cannot_run_are_skipped(tmp_path, monkeypatch):
    gluon = {**entry("attention_fwd", {"S": 4096, "D": 128, "causal": False}, "gluon"),
             "config": {"backend": "gluon", "consumer_groups": 2}}
    write_table(tmp_path, "sm_90.json", "sm_90", [gluon, entry("attention_fwd", {"S": 512, "D": 128, "causal": False}, "tri")])
    d = dispatcher(tmp_path, ["gluon", "tri"], exact_keys=("D", "causal"), monkeypatch=monkeypatch)
    decision = select(d, {"S": 4096, "D": 128, "causal": False}, "attention_fwd")
    assert decision.variant == "tri" and any('backend "gluon"' in n for n in decision.notes)
    gpu = torch.device("cuda", 0)  # a Hopper GPU, outside the interpreter, as far as the dispatcher asks
    monkeypatch.setenv("HK_DEVICE_NAME", "NVIDIA H100 80GB HBM3")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert d.resolve("attention_fwd", gpu, torch.bfloat16, {"S": 4096, "D": 128, "causal": False}).variant == "gluon"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    assert d.resolve("attention_fwd", gpu, torch.bfloat16, {"S": 4096, "D": 128, "causal": False}).variant == "tri"


def test_other_argument_dtypes_run_the_chosen_configs_variant_for_them(tmp_path, monkeypatch):
    """A call keyed with other argument dtypes (an output's, a weight's) picks its entry by the op's
    dtype, then runs that entry's config compiled for them, with the entry's own `dtype_configs`
    (two tables' entries of one config may record different ones), and names the config it runs;
    without such a variant, PyTorch, saying why. The op dtype's own calls, and other argument
    dtypes, are cached apart."""
    monkeypatch.setenv("HK_ARCH", "sm_90")
    monkeypatch.setenv("HK_DEVICE_NAME", "GPU X")
    specialization = {"x": {"dtype": "bfloat16", "rank": 2}, "weight": {"dtype": "bfloat16", "rank": 1},
                      "out_dtype": "bfloat16"}

    def tuned(shape, vid, dtype_configs=None):
        return {**entry("softmax_fwd", shape, vid), "specialization": specialization,
                "dtype_configs": dtype_configs or {}}

    small, large = {"M": 8, "N": 1024}, {"M": 8, "N": 65536}
    write_table(tmp_path, "sm_90.json", "sm_90", [tuned(small, "a"), tuned(large, "b")])
    write_table(tmp_path, "sm_90-gpu-x.json", "sm_90", [tuned(large, "b", {"out_dtype=float32": {"w": 8}})],
                device_name="GPU X")
    one, both = "out_dtype=float32", "out_dtype=float32,weight=float32"
    A, W = (dtype_variant_id("softmax_fwd", {"v": "a"}, specialization, key, {}) for key in (one, both))
    B = dtype_variant_id("softmax_fwd", {"v": "b"}, specialization, one, {"w": 8})
    assert B != dtype_variant_id("softmax_fwd", {"v": "b"}, specialization, one, {})
    d = Dispatcher(FakeRegistry(["a", "b", A, W, B]), lambda: load_tables_from(tmp_path))
    names = ("M", "N")
    decision = d.select("softmax_fwd", CPU, torch.bfloat16, names, (8, 1000), (("out_dtype", torch.float32),))
    assert (decision.variant, decision.launcher(), decision.dtypes) == (A, A, one)
    assert decision.config == {"v": "a"} and "compiled for out_dtype=float32" in decision.reason
    wide = d.select("softmax_fwd", CPU, torch.bfloat16, names, (8, 1000),
                    (("out_dtype", torch.float32), ("weight", torch.float32)))
    assert (wide.variant, wide.dtypes) == (W, both)
    assert d.select("softmax_fwd", CPU, torch.bfloat16, names, (8, 1000)).variant == "a"
    own = d.select("softmax_fwd", CPU, torch.bfloat16, names, (8, 60000), (("out_dtype", torch.float32),))
    assert (own.variant, own.table, own.config) == (B, "sm_90-gpu-x.json", {"v": "b", "w": 8})
    missing = d.select("softmax_fwd", CPU, torch.bfloat16, names, (8, 60000), (("out_dtype", torch.float16),))
    assert missing.launcher is None and "not generated for out_dtype=float16" in missing.reason

