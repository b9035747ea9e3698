"""tools/fit_dtype_variants.py: each variant of the tuned tables (an entry's own, its dtype variants),
cross-compiled for sm_90 (real Triton, no GPU), fits the shared memory a program may take at the
shapes it serves; the tables record the configs that make it fit, and `generate` compiles them."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton

from build_tools.autotune.table import with_config
from helion_kernels._variant import variant_id

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


def _entry(table: str, shape: dict) -> tuple[dict, dict]:
    shipped = json.loads((ROOT / "tuned_configs" / table).read_text())
    entry = next(e for e in shipped["entries"] if e["op"] == "rms_norm_bwd" and e["dtype"] == "bfloat16"
                 and e["shape"] == shape)
    return shipped, entry


def _fit_alone(tmp_path, shipped: dict, entry: dict):
    table = tmp_path / "sm_90.json"
    table.write_text(json.dumps({**shipped, "entries": [entry]}))
    done = _run("--tables", str(table))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _run("--check", "--tables", str(table)).returncode == 0
    return json.loads(table.read_text())["entries"][0], done.stdout


@NEEDS_NVIDIA
def test_a_dtype_variant_that_does_not_fit_gets_its_loops_unpipelined(tmp_path):
    """The H200's RMSNorm backward at 4096x768 pipelines its loops over 2 and 4 stages: with a
    float32 gradient the stages hold float32 rows past the 227 KiB a program may take, so the fit
    turns the loops' pipelining off for those variants alone."""
    shipped, entry = _entry("sm_90.json", {"M": 4096, "N": 768})
    recorded = entry.pop("dtype_configs")
    assert max(entry["config"]["range_num_stages"]) > 1
    fitted, _ = _fit_alone(tmp_path, shipped, entry)
    unpipelined = {"range_num_stages": [1] * len(entry["config"]["range_num_stages"])}
    assert fitted["config"] == entry["config"] and fitted["dtype_configs"] == recorded
    assert recorded and all(overrides == unpipelined for overrides in recorded.values())


@NEEDS_NVIDIA
def test_an_entrys_own_config_that_does_not_fit_where_it_serves_is_unpipelined(tmp_path):
    """The H100's RMSNorm backward tuned at one row pipelined its loops over 3 stages: one row
    compiles specialized (32 bytes of shared memory), two rows and more took 327,768 bytes, so every
    call it served past one row ran PyTorch's backward after the launch failed. The fit unpipelines
    the entry's own config (its variant id follows) and keeps each recorded dtype variant's config."""
    shipped, entry = _entry("sm_90-nvidia-h100-80gb-hbm3.json", {"M": 1, "N": 4096})
    before = with_config(entry, {**entry["config"], "range_num_stages": [1, 3, 3]})
    fitted, printed = _fit_alone(tmp_path, shipped, before)
    assert fitted["config"] == {**before["config"], "range_num_stages": [1, 1, 1]}
    assert fitted["variant"] == variant_id("rms_norm_bwd", fitted["config"], fitted["specialization"])
    assert "the entry's config changed" in printed
    for key, overrides in before["dtype_configs"].items():
        assert {**fitted["config"], **fitted["dtype_configs"][key]} == {**before["config"], **overrides}


@NEEDS_NVIDIA
def test_recorded_overrides_are_kept_and_fitted_on_top(tmp_path):
    """Overrides a config probe recorded for a variant (here 4 warps) stay; where they do not fit,
    the fallbacks go on top of them."""
    shipped, entry = _entry("sm_90.json", {"M": 4096, "N": 768})
    entry["dtype_configs"] = {"grad_out=float32": {"num_warps": 4}}
    fitted, _ = _fit_alone(tmp_path, shipped, entry)
    unpipelined = [1] * len(entry["config"]["range_num_stages"])
    assert fitted["dtype_configs"]["grad_out=float32"] == {"num_warps": 4, "range_num_stages": unpipelined}
