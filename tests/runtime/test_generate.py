"""`python -m build_tools generate`: committed files are fresh, staleness is detected, output is clean."""
import ast
import builtins
import dis
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from build_tools import default_table, generate
from tests.kernels.kernel_check import shipped_entries, variants_of


def _global_names(code) -> set:
    """Global names a function (and the functions nested in it) loads."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            names |= _global_names(const)
    return names


@pytest.fixture(scope="module")
def rendered():
    """The committed modules, which test_generate_check_passes_on_committed_files proves equal to a
    fresh `generate` run (rendering again here would double the suite's slowest step)."""
    return {path.name: path.read_text() for path in sorted(generate.OUT_DIR.glob("*.py"))}


def test_generate_check_passes_on_committed_files():
    result = subprocess.run([sys.executable, "-m", "build_tools", "generate", "--check"], cwd=generate.REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:] + "\nrun `python -m build_tools generate` and commit"


def test_check_detects_edits_missing_and_extra_files(rendered, tmp_path, monkeypatch):
    monkeypatch.setattr(generate, "render_all", lambda tables: rendered)
    out = tmp_path / "_generated"
    assert generate.main(["--out", str(out)]) == 0
    assert generate.main(["--check", "--out", str(out)]) == 0
    family = next(name for name in rendered if name != "__init__.py")
    (out / family).write_text(rendered[family] + "\n# edited\n")
    (out / "stray.py").write_text("")
    (out / "__init__.py").unlink()
    assert generate.stale_files(rendered, out) == sorted(["__init__.py", family, "stray.py"])
    assert generate.main(["--check", "--out", str(out)]) == 1
    assert generate.main(["--out", str(out)]) == 0
    assert generate.stale_files(rendered, out) == [] and not (out / "stray.py").exists()


def test_modules_are_standalone_and_cover_every_table_entry(rendered, tmp_path):
    variants, families = {}, {}
    for name, text in rendered.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert all(m.split(".")[0] in ("torch", "triton") or m.split(".")[0] in sys.stdlib_module_names
                           for m in modules), (name, modules)
        if name == "__init__.py":
            continue
        assert f"kernels_src/{name}" in text.splitlines()[0]
        path = tmp_path / name
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"_generated_check_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # from a file: Triton's JIT reads kernel source from it
        namespace = vars(module)
        for op, launchers in namespace["VARIANTS"].items():
            variants.setdefault(op, set()).update(launchers)
            families[op] = path.stem
            assert all(fn.__name__ == f"{op}__{vid}" for vid, fn in launchers.items())
            for fn in launchers.values():
                undefined = _global_names(fn.__code__) - set(namespace) - set(dir(builtins))
                assert not undefined, f"{name}: {fn.__name__} reads undefined globals {sorted(undefined)}"
    for table, entry in generate.table_entries():
        assert entry["variant"] in variants.get(entry["op"], set()), (table, entry["op"], entry["shape"])
    package = {}
    exec(rendered["__init__.py"], package)
    assert package["FAMILIES"] == families
    from helion_kernels._tables import load_table

    twins = [(e.op, e.twin) for path in sorted(generate.TABLE_DIR.glob("*.json"))
             for entries in load_table(path).entries.values() for e in entries if e.twin]
    assert twins, "the tables ship static_reduction_sizes entries, whose twins must be generated"
    for op, twin in twins:
        assert twin in variants[op], (op, twin)
    wide = [row for row in variants_of(shipped_entries(), twins=True) if row[3]]
    assert {op for op, *_ in wide} == {"softmax_fwd", "softmax_bwd", "rms_norm_fwd", "rms_norm_bwd",
                                       "rms_norm_noweight_fwd", "rms_norm_noweight_bwd"}
    assert all(vid in variants[op] for op, _, vid, _ in wide)  # each entry's, with its own dtype_configs


def test_static_entry_gets_its_dynamic_twin(tmp_path):
    """A table entry whose config compiles its reduction sizes in yields two variants: its own and
    its twin, the entry's dynamic_config where it has one, else its config with the flag off. An op
    whose OpSpec names no reduction_keys cannot ship such an entry; a static dynamic_config is refused."""
    import dataclasses

    from helion_kernels._variant import variant_id

    _, entry = next((t, e) for t, e in generate.table_entries()
                    if e["op"] == "softmax_fwd" and e["config"].get("static_reduction_sizes"))
    flag_off = {**entry["config"], "static_reduction_sizes": False}
    families = generate.op_families()
    for dynamic in (None, dict(flag_off, num_warps=8)):
        raw = {k: v for k, v in entry.items() if k != "dynamic_config"}
        if dynamic:
            raw["dynamic_config"] = dynamic
        (tmp_path / "sm_90.json").write_text(json.dumps({"schema": 1, "arch": "sm_90", "entries": [raw]}))
        variants = generate.collect_variants(families, generate.table_entries(tmp_path))["softmax"]
        twin_vid = variant_id("softmax_fwd", dynamic or flag_off, entry["specialization"])
        float32_output = {**entry["specialization"], "out_dtype": "float32"}
        wide = {vid: variant_id("softmax_fwd", config, float32_output)
                for vid, config in ((entry["variant"], entry["config"]), (twin_vid, dynamic or flag_off))}
        assert set(variants) == {("softmax_fwd", vid) for vid in (*wide, *wide.values())}
        assert variants[("softmax_fwd", twin_vid)].config == (dynamic or flag_off)
        assert variants[("softmax_fwd", twin_vid)].used_by == [
            f"sm_90.json bfloat16 {json.dumps(entry['shape'], separators=(',', ':'))} at other reduction sizes"]
        for vid, wide_vid in wide.items():  # each config also compiled for float32 output (OpSpec.dtype_variants)
            assert variants[("softmax_fwd", wide_vid)].used_by == [f"variant {vid} with out_dtype=float32"]
            assert variants[("softmax_fwd", wide_vid)].specialization == {
                **variants[("softmax_fwd", vid)].specialization, "out_dtype": "float32"}
    raw["dynamic_config"] = entry["config"]
    (tmp_path / "sm_90.json").write_text(json.dumps({"schema": 1, "arch": "sm_90", "entries": [raw]}))
    with pytest.raises(generate.GenerationError, match="dynamic_config compiles"):
        generate.collect_variants(families, generate.table_entries(tmp_path))
    families["softmax"] = [dataclasses.replace(spec, reduction_keys=()) for spec in families["softmax"]]
    with pytest.raises(generate.GenerationError, match="names no reduction_keys"):
        generate.collect_variants(families, generate.table_entries(tmp_path))


@pytest.mark.skipif(tuple(int(p) for p in np.__version__.split(".")[:2]) >= (2, 3),
                    reason="the default table is built under Triton's interpreter, which needs numpy < 2.3 "
                           "(the project's pin; CI has it, the GPU machine's image does not)")
def test_entry_is_compiled_for_its_ops_other_argument_dtypes(tmp_path):
    """OpSpec.dtype_variants: a bf16 RMSNorm backward entry is also compiled for a float32 gradient,
    a float32 weight and both. Each variant's specialization is the entry's with those tensors'
    dtypes changed (ranks kept), its config the entry's with the entry's `dtype_configs` for its key,
    and its id the one the dispatcher derives from the entry (`Entry.dtype_variant`). Another table's
    entry of the same config with other `dtype_configs` gets its own variant for that key."""
    from helion_kernels._tables import load_table

    table = json.loads((generate.TABLE_DIR / "sm_90.json").read_text())
    entry = next(e for e in table["entries"] if e["op"] == "rms_norm_bwd" and e["dtype"] == "bfloat16"
                 and not e["config"].get("static_reduction_sizes"))
    unpipelined = {"range_num_stages": [1] * len(entry["config"]["range_num_stages"])}
    entry = {**entry, "dtype_configs": {"grad_out=float32,weight=float32": unpipelined}}  # tools/fit_dtype_variants.py
    other = {**entry, "dtype_configs": {"grad_out=float32,weight=float32": {"num_stages": 1}}}
    for name, e, device in (("sm_90.json", entry, None), ("sm_90-gpu-x.json", other, "GPU X")):
        (tmp_path / name).write_text(json.dumps({"schema": 1, "arch": "sm_90", "device_name": device, "entries": [e]}))
    variants = generate.collect_variants(generate.op_families(), generate.table_entries(tmp_path))["rms_norm"]
    base = variants[("rms_norm_bwd", entry["variant"])]
    wide = {"dtype": "float32", "rank": 2}
    expected = {"grad_out=float32": {"grad_out": wide}, "weight=float32": {"weight": {**wide, "rank": 1}},
                "grad_out=float32,weight=float32": {"grad_out": wide, "weight": {**wide, "rank": 1}}}
    assert len(variants) == 5
    for name, e in (("sm_90.json", entry), ("sm_90-gpu-x.json", other)):
        loaded = next(iter(load_table(tmp_path / name).entries.values()))[0]
        for key, changed in expected.items():
            derived = variants[("rms_norm_bwd", loaded.dtype_variant(key))]
            assert derived.config == {**base.config, **e["dtype_configs"].get(key, {})}
            assert derived.specialization == {**entry["specialization"], **changed}
            assert derived.used_by == [f"variant {base.vid} with {key}"]


def test_default_table_is_reproducible():
    check = ("from build_tools import default_table as d; "
             "assert d.render(d.build_table()) == d.DEFAULT_PATH.read_text(), "
             "'run `python -m build_tools default-table` and commit the result'")
    env = {**os.environ, "TRITON_INTERPRET": "1"}  # the table is checked under the interpreter
    result = subprocess.run([sys.executable, "-c", check], cwd=generate.REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    table = json.loads(default_table.DEFAULT_PATH.read_text())
    assert table["arch"] == "default" and table["entries"]


def test_default_table_rules_split_rows_by_length():
    rows = default_table.representative_points({"M", "N"})
    persistent = [shape["N"] for shape, overrides, _ in rows if overrides["reduction_loops"] == [None]]
    looped = [shape["N"] for shape, overrides, _ in rows if overrides["reduction_loops"] != [None]]
    assert persistent and looped and max(persistent) <= default_table.PERSISTENT_MAX_N < min(looped)


def test_generate_rejects_entries_without_identity(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"schema": 1, "arch": "sm_90", "entries": [
        {"op": "softmax_fwd", "dtype": "float32", "shape": {"M": 4, "N": 4}, "config": {}}]}))
    with pytest.raises(generate.GenerationError, match="specialization"):
        generate.collect_variants(generate.op_families(), generate.table_entries(tmp_path))


def test_cli_dispatch(capsys):
    from build_tools.__main__ import main

    assert main(["--help"]) == 0 and "generate" in capsys.readouterr().out
    assert main(["no-such-command"]) == 2


def test_tuned_entry_config_survives_binding_on_small_shapes(tmp_path):
    """A config legal only at the entry's real size (a 8192-element reduction loop) is generated as
    tuned, not clamped to what a small binding would allow."""
    import torch

    from helion_kernels._variant import to_plain, variant_id

    spec = next(s for s in generate.op_families()["rms_norm"] if s.name == "rms_norm_fwd")
    shape = {"M": 4, "N": 65536}
    spec.kernel.reset()
    bound = spec.kernel.bind(spec.make_inputs(shape, torch.float32, "cpu", 0))
    default = to_plain(bound.config_spec.default_config())
    config = to_plain(bound.config_spec.normalize(
        {**default, "reduction_loops": [8192] * len(default["reduction_loops"])}))
    specialization = to_plain(bound.specialization_key())
    vid = variant_id(spec.name, config, specialization)
    (tmp_path / "sm_90.json").write_text(json.dumps({"schema": 1, "arch": "sm_90", "entries": [
        {"op": spec.name, "dtype": "float32", "shape": shape, "specialization": specialization,
         "config": config, "variant": vid}]}))
    variants = generate.collect_variants(generate.op_families(), generate.table_entries(tmp_path))
    text = generate.render_family("rms_norm", generate.op_families()["rms_norm"], variants["rms_norm"])
    launcher = text[text.index(f"def rms_norm_fwd__{vid}"):]
    assert "8192" in launcher.split("\n\n")[0]


def test_kernels_are_defined_on_their_first_launch(rendered, tmp_path, device):
    """Importing a generated module defines no Triton kernel (`triton.jit` reads and hashes each
    kernel's source); a launcher's first call defines exactly the kernels it launches, which its
    later calls reuse. The reductions' combine functions are defined at import, once each (a
    kernel compiled later, Triton or Gluon, finds them as functions)."""
    import importlib.util

    import torch
    import triton.runtime.interpreter

    path = tmp_path / "softmax.py"
    path.write_text(rendered["softmax.py"])
    spec = importlib.util.spec_from_file_location("_generated_lazy_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lazy = {name for name, value in vars(module).items() if isinstance(value, module._LazyKernel)}
    assert lazy and all(name.startswith("_softmax_") for name in lazy)
    triton_kernels = (triton.runtime.JITFunction, triton.runtime.interpreter.InterpretedFunction)
    defined_early = [name for name, v in vars(module).items() if isinstance(v, triton_kernels)]
    assert all(name.startswith(("_max_", "_min_")) for name in defined_early), defined_early
    combine_texts = re.findall(r"^def (_(?:max|min)_\w+)\(", rendered["softmax.py"], re.M)
    assert sorted(combine_texts) == sorted(defined_early) and len(set(combine_texts)) == len(combine_texts)
    from helion_kernels._dispatch import DISPATCHER

    x = torch.randn(3, 77, device=device)
    chosen = DISPATCHER.select("softmax_fwd", x.device, x.dtype, ("M", "N"), tuple(x.shape)).variant
    launcher = module.VARIANTS["softmax_fwd"][chosen]
    torch.testing.assert_close(launcher(x, torch.float32), torch.softmax(x, -1))
    defined = {name for name in lazy if not isinstance(vars(module)[name], module._LazyKernel)}
    assert defined and defined == {name for name in lazy if name in launcher.__code__.co_names}
    kernels = {name: vars(module)[name] for name in defined}
    launcher(x, torch.float32)
    assert all(vars(module)[name] is kernel for name, kernel in kernels.items())
