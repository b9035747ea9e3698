"""tools/register_snapshot.py: a table entry cross-compiled for sm_90 (real Triton, no GPU) records
each launched kernel's registers and spills; `check` reports a kernel whose allocation changed and
fails where one grew."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "register_snapshot.py"
_spec = importlib.util.spec_from_file_location("register_snapshot", TOOL)
snapshot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(snapshot)

FACTS = {"registers": 40, "spill_stores": 0, "spill_loads": 0}


def test_changes_lists_each_moved_kernel_and_says_whether_one_grew():
    before = {"a": [FACTS, FACTS], "b": [FACTS], "c": [FACTS], "gone": [FACTS]}
    after = {"a": [FACTS, {**FACTS, "registers": 32}], "b": [{**FACTS, "spill_stores": 8}], "c": [FACTS],
             "new": [FACTS]}
    lines, grew = snapshot.changes(before, after)
    assert lines == ["a kernel 1: registers 40 -> 32", "b kernel 0: spill_stores 0 -> 8"] and grew
    lines, grew = snapshot.changes(before, {"a": [FACTS, {**FACTS, "registers": 32}]})
    assert lines == ["a kernel 1: registers 40 -> 32"] and not grew
    lines, grew = snapshot.changes({"a": [FACTS]}, {"a": "error: ptxas failed"})
    assert len(lines) == 1 and grew


def _run(*args):
    env = {**os.environ, "TRITON_INTERPRET": "0", "HK_TEST_DEVICE": "cpu"}
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_an_entry_is_cross_compiled_and_checked_against_its_snapshot(tmp_path):
    shipped = json.loads((ROOT / "tuned_configs" / "sm_90.json").read_text())
    entry = next(e for e in shipped["entries"] if e["op"] == "rms_norm_bwd" and e["shape"] == {"M": 1, "N": 4096})
    table = tmp_path / "one.json"
    table.write_text(json.dumps({**shipped, "entries": [entry]}))
    out = tmp_path / "snapshot.json"
    done = _run("write", str(out), "--tables", str(table))
    assert done.returncode == 0, done.stderr[-3000:]
    (facts,) = json.loads(out.read_text()).values()
    assert facts and all(f["registers"] > 0 and set(f) == set(snapshot.FIELDS) for f in facts)
    done = _run("check", str(out), "--tables", str(table))
    assert done.returncode == 0 and "no kernel's registers or spills changed" in done.stdout
    key = next(iter(json.loads(out.read_text())))
    out.write_text(json.dumps({key: [{**facts[0], "registers": facts[0]["registers"] - 8}] + facts[1:]}))
    done = _run("check", str(out), "--tables", str(table))
    assert done.returncode == 1 and f"registers {facts[0]['registers'] - 8} -> {facts[0]['registers']}" in done.stdout
