"""explain(), patch()/unpatch(), `python -m helion_kernels info`, and the runtime's import boundary."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels._backend import ORIGINAL
from runtime_helpers import randn, uses_kernels_here

PACKAGE = Path(hk.__file__).resolve().parent


def test_explain_names_kernel_config_and_table(device):
    if not uses_kernels_here(device):
        pytest.skip("kernels do not run on CPU without TRITON_INTERPRET=1")
    x = randn(8, 64, device=device)
    report = hk.explain(hk.rmsnorm, x, randn(64, device=device))
    text = str(report)
    assert "rms_norm_fwd" in text and "arch=" in text and "shape={'M': 8, 'N': 64}" in text
    (decision,) = report.forward
    assert decision.uses_kernel and decision.config and decision.table.endswith(".json")
    assert f"rms_norm_fwd__{decision.variant}" in text and decision.tuned_shape is not None


def test_explain_backward_and_fallback_reasons(device):
    x = randn(4, 8, device=device, requires_grad=True)
    if uses_kernels_here(device):
        assert [d.op for d in hk.explain(hk.softmax, x).backward] == ["softmax_bwd"]
        assert hk.explain(hk.softmax, x.detach()).backward == []
    report = hk.explain(hk.softmax, x.double())
    assert not report.uses_kernels and "float64" in report.fallback_reason


def test_explain_accepts_torch_functions_and_modules(device):
    x = randn(3, 8, device=device)
    assert hk.explain(F.softmax, x, -1).function == "softmax"
    assert hk.explain(torch.matmul, x, x.t()).function == "matmul"
    assert hk.explain(hk.nn.RMSNorm(8, device=device), x).function == "rms_norm"
    assert "torch.nn.RMSNorm" in str(hk.explain(torch.nn.RMSNorm(8), x))
    with pytest.raises(TypeError, match="does not know"):
        hk.explain(torch.relu, x)


def test_explain_attention_without_variant_says_why(device):
    q = randn(1, 1, 4, 24, dtype=torch.float16, device=device)
    report = hk.explain(hk.scaled_dot_product_attention, q, q, q)
    if uses_kernels_here(device):
        (decision,) = report.forward
        assert not decision.uses_kernel and "D=24" in decision.reason
    out = hk.scaled_dot_product_attention(q, q, q)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, q, q), rtol=2e-3, atol=2e-3)


def test_patch_routes_functional_and_restores():
    names = ("rms_norm", "softmax", "linear", "scaled_dot_product_attention")
    with hk.patch():
        assert F.rms_norm is hk.rms_norm and F.linear is hk.linear
        assert F.scaled_dot_product_attention is hk.scaled_dot_product_attention
        assert F.softmax is not ORIGINAL["softmax"]
        x = randn(3, 5)
        torch.testing.assert_close(F.softmax(x, dim=1), ORIGINAL["softmax"](x, dim=1))
        torch.testing.assert_close(torch.nn.Softmax(dim=0)(x), ORIGINAL["softmax"](x, dim=0))
        torch.testing.assert_close(torch.nn.RMSNorm(5)(x), ORIGINAL["rms_norm"](x, [5]))
    assert all(getattr(F, name) is ORIGINAL[name] for name in names)
    hk.patch()
    try:
        assert F.linear is hk.linear
    finally:
        hk.unpatch()
    assert F.linear is ORIGINAL["linear"]


def test_info_command_reports_arch_and_tables():
    env = {**os.environ, "HK_ARCH": "sm_90"}
    result = subprocess.run([sys.executable, "-m", "helion_kernels", "info"], capture_output=True, text=True,
                            env=env, cwd=PACKAGE.parent, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "arch key: sm_90" in result.stdout and "table folders:" in result.stdout
    assert "table default.json (arch default)" in result.stdout


def test_runtime_never_imports_build_tools_or_kernels_src():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("build_tools", "kernels_src"), f"{path} imports {name}"
    code = ("import sys, torch, helion_kernels as hk; x = torch.randn(3, 4); hk.softmax(x); hk.explain(hk.softmax, x);"
            "hk._dispatch.DISPATCHER.registry.ops();"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('build_tools', 'kernels_src')]; assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent,
                            timeout=120)
    assert result.returncode == 0, result.stderr
