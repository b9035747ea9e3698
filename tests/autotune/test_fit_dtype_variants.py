"""tools/fit_dtype_variants.py: each dtype variant of the tuned tables, cross-compiled for sm_90 (real
Triton, no GPU), fits the shared memory a program may take; the tables record the config overrides
that make it fit, and `generate` compiles the variant with them."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "fit_dtype_variants.py"
NEEDS_NVIDIA = pytest.mark.skipif("nvidia" not in triton.backends.backends,
                                  reason="Triton's NVIDIA backend is not installed")


def _run(*args):
    env = {**os.environ, "TRITON_INTERPRET": "0", "HK_TEST_DEVICE": "cpu"}
    return subprocess.run([sys.executable, str(TOOL), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)


@NEEDS_NVIDIA
def test_the_shipped_tables_hold_the_fit():
    done = _run("--check")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


@NEEDS_NVIDIA
def test_a_variant_that_does_not_fit_gets_its_loops_unpipelined(tmp_path):
    """The H100's decode entry of the RMSNorm backward pipelines its row loop over 3 stages: with a
    float32 gradient or weight the stages hold whole float32 rows (264-772 KiB at 2 rows of 8192
    columns), so the fit turns the loops' pipelining off for those variants alone."""
    shipped = json.loads((ROOT / "tuned_configs" / "sm_90-nvidia-h100-80gb-hbm3.json").read_text())
    entry = next(e for e in shipped["entries"] if e["op"] == "rms_norm_bwd" and e["shape"] == {"M": 1, "N": 4096})
    assert entry.pop("dtype_configs")
    assert max(entry["config"]["range_num_stages"]) > 1
    table = tmp_path / "sm_90.json"
    table.write_text(json.dumps({**shipped, "entries": [entry]}))
    done = _run("--tables", str(table))
    assert done.returncode == 0, done.stderr[-3000:]
    fitted = json.loads(table.read_text())["entries"][0]["dtype_configs"]
    unpipelined = {"range_num_stages": [1] * len(entry["config"]["range_num_stages"])}
    assert fitted == {key: unpipelined for key in ("grad_out=float32", "weight=float32",
                                                   "grad_out=float32,weight=float32")}
    assert _run("--check", "--tables", str(table)).returncode == 0


@NEEDS_NVIDIA
def test_recorded_overrides_are_kept_and_fitted_on_top(tmp_path):
    """Overrides a config probe recorded for a variant (here 4 warps) stay; where they do not fit,
    the fallbacks go on top of them."""
    shipped = json.loads((ROOT / "tuned_configs" / "sm_90-nvidia-h100-80gb-hbm3.json").read_text())
    entry = next(e for e in shipped["entries"] if e["op"] == "rms_norm_bwd" and e["shape"] == {"M": 1, "N": 4096})
    entry["dtype_configs"] = {"grad_out=float32": {"num_warps": 4}}
    table = tmp_path / "sm_90.json"
    table.write_text(json.dumps({**shipped, "entries": [entry]}))
    assert _run("--tables", str(table)).returncode == 0
    fitted = json.loads(table.read_text())["entries"][0]["dtype_configs"]
    assert fitted["grad_out=float32"] == {"num_warps": 4, "range_num_stages": [1] * len(entry["config"]["range_num_stages"])}
