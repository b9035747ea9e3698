"""hk.rms_norm / hk.rmsnorm / hk.nn.RMSNorm against torch (float64 reference), values and gradients."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from helion_kernels import _autocast
from helion_kernels._dispatch import DISPATCHER
from runtime_helpers import TOLERANCE, assert_close, double_leaf, grads, randn, uses_kernels_here
from tests.kernels.kernel_check import shipped_entries, variants_of

# (input shape, normalized_shape): size-1 rows, odd sizes, a row longer than the looped-reduction
# chunk, leading batch dims, and a two-dim normalized_shape.
CASES = [((1, 1), (1,)), ((37, 19), (19,)), ((3, 5, 130), (130,)), ((2, 9000), (9000,)),
         ((4, 3, 6), (3, 6))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape, normalized", CASES)
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_matches_torch(device, poison, dtype, shape, normalized, with_weight):
    x = randn(*shape, dtype=dtype, device=device, requires_grad=True)
    w = randn(*normalized, dtype=dtype, device=device, requires_grad=True) if with_weight else None
    assert hk.explain(hk.rms_norm, x, normalized, w).uses_kernels == uses_kernels_here(device)
    out = hk.rms_norm(x, normalized, w, eps=1e-5)
    x64, w64 = double_leaf(x), (double_leaf(w) if w is not None else None)
    expected = F.rms_norm(x64, normalized, w64, eps=1e-5)
    assert_close(out, expected, dtype)
    grad_out = randn(*shape, dtype=dtype, device=device)
    dx, *dw = grads(out, (x, w), grad_out)
    dx64, *dw64 = grads(expected, (x64, w64), grad_out.double())
    assert_close(dx, dx64, dtype)
    if w is not None:
        rtol, atol = TOLERANCE[dtype]
        rows = x.numel() // w.numel()
        assert dw[0].dtype == dtype
        torch.testing.assert_close(dw[0].double(), dw64[0], rtol=rtol, atol=atol * rows ** 0.5)


HALF = [torch.bfloat16, torch.float16]


@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize("shape, normalized", CASES)
def test_float32_weight_beside_half_rows_is_read_as_it_is(device, poison, half, shape, normalized):
    """A float32 (master) weight beside half rows: one kernel each way keyed by the rows' dtype with
    the weight's beside it; the output and dx in the rows' dtype, dweight in float32 (PyTorch's
    dtypes: float32 math, one rounding)."""
    x = randn(*shape, dtype=half, device=device, requires_grad=True)
    w = randn(*normalized, device=device, requires_grad=True)
    explained = hk.explain(hk.rms_norm, x, normalized, w)
    (forward,), (backward,) = explained.forward, explained.backward
    assert (forward.dtypes, backward.dtypes) == ("weight=float32", "weight=float32")
    assert forward.uses_kernel == backward.uses_kernel == uses_kernels_here(device)
    out = hk.rms_norm(x, normalized, w, eps=1e-5)
    x64, w64 = double_leaf(x), double_leaf(w)
    expected = F.rms_norm(x64, normalized, w64, eps=1e-5)
    assert out.dtype == half
    assert_close(out, expected, half)
    grad_out = randn(*shape, dtype=half, device=device)
    dx, dw = grads(out, (x, w), grad_out)
    dx64, dw64 = grads(expected, (x64, w64), grad_out.double())
    assert (dx.dtype, dw.dtype) == (half, torch.float32)
    assert_close(dx, dx64, half)
    rows = x.numel() // w.numel()
    torch.testing.assert_close(dw.double(), dw64, rtol=1e-4, atol=1e-4 * rows ** 0.5)


@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize("weight_dtype", ["half", torch.float32, None], ids=["half_weight", "float32_weight", "no_weight"])
@pytest.mark.parametrize("shape, normalized", CASES)
def test_autocast_float32_rms_norm_of_half_rows_is_one_kernel_each_way(device, poison, monkeypatch, half,
                                                                      weight_dtype, shape, normalized):
    """CUDA autocast runs rms_norm in float32 (emulated on CPU by the table of which device autocasts
    which op): the half rows are read as they are and the output written in float32, with no rounding
    through the half dtype (float32 tolerances); the backward takes the float32 gradient beside the
    half rows to dx in their dtype and dweight in the weight's."""
    monkeypatch.setitem(_autocast._AUTOCASTS, ("rms_norm", device), True)
    x = randn(*shape, dtype=half, device=device, requires_grad=True)
    w = None if weight_dtype is None else randn(*normalized, dtype=half if weight_dtype == "half" else weight_dtype,
                                               device=device, requires_grad=True)
    with torch.autocast(device, dtype=half):
        explained = hk.explain(hk.rms_norm, x, normalized, w)
        out = hk.rms_norm(x, normalized, w, eps=1e-5)
        alias = hk.rmsnorm(x, w, 1e-5) if len(normalized) == 1 else out
    (forward,), (backward,) = explained.forward, explained.backward
    weight_key = "" if w is None or w.dtype == half else ",weight=float32"
    assert (forward.dtypes, backward.dtypes) == (f"out_dtype=float32{weight_key}", f"grad_out=float32{weight_key}")
    assert forward.uses_kernel == backward.uses_kernel == uses_kernels_here(device)
    x64, w64 = double_leaf(x), (double_leaf(w) if w is not None else None)
    expected = F.rms_norm(x64, normalized, w64, eps=1e-5)
    assert out.dtype == alias.dtype == torch.float32
    assert_close(out, expected, torch.float32)
    assert_close(alias, expected, torch.float32)
    grad_out = randn(*shape, device=device)
    dx, *dw = grads(out, (x, w), grad_out)
    dx64, *dw64 = grads(expected, (x64, w64), grad_out.double())
    assert dx.dtype == half
    assert_close(dx, dx64, half)
    if w is not None:
        rtol, atol = TOLERANCE[w.dtype]
        assert dw[0].dtype == w.dtype
        torch.testing.assert_close(dw[0].double(), dw64[0], rtol=rtol, atol=atol * (x.numel() // w.numel()) ** 0.5)


@pytest.fixture
def fresh_decisions():
    DISPATCHER.reload()
    yield
    DISPATCHER.reload()


@pytest.mark.parametrize("case", ["no variant", "does not fit"])
def test_mixed_dtypes_without_a_variant_here_run_the_float32_kernels(device, monkeypatch, fresh_decisions, case):
    """Where the chosen entry has no variant for the call's dtypes, or its variant does not fit the
    device, the call runs the float32 kernels on float32 copies and casts (the path before dtype
    variants), not PyTorch's unfused ops."""
    from triton.runtime.errors import OutOfResources

    from helion_kernels._ops import rms_norm as op

    def refused(*args):
        raise AssertionError("PyTorch's implementation ran")

    def does_not_fit(*args):
        raise OutOfResources(300000, 232448, "shared memory")

    monkeypatch.setattr(op, "_torch_fwd", refused)
    monkeypatch.setattr(op, "_torch_bwd", refused)
    registry = DISPATCHER.registry
    names = ("rms_norm_fwd", "rms_norm_bwd")
    derived = {vid for _, _, vid, key in variants_of(shipped_entries(names), twins=True) if key}
    if case == "no variant":
        launchers = {name: {vid: fn for vid, fn in registry.launchers(name).items() if vid not in derived}
                     for name in names}
    else:
        launchers = {name: {vid: does_not_fit if vid in derived else fn for vid, fn in registry.launchers(name).items()}
                     for name in names}
    monkeypatch.setattr(registry, "launchers", lambda name: launchers[name])
    x = randn(37, 300, dtype=torch.bfloat16, device=device, requires_grad=True)
    w = randn(300, device=device, requires_grad=True)
    out = hk.rms_norm(x, (300,), w, eps=1e-5)
    x64, w64 = double_leaf(x), double_leaf(w)
    expected = F.rms_norm(x64, (300,), w64, eps=1e-5)
    assert out.dtype == torch.bfloat16
    assert_close(out, expected, torch.bfloat16)
    grad_out = randn(37, 300, dtype=torch.bfloat16, device=device)
    dx, dw = grads(out, (x, w), grad_out)
    dx64, dw64 = grads(expected, (x64, w64), grad_out.double())
    assert (dx.dtype, dw.dtype) == (torch.bfloat16, torch.float32)
    assert_close(dx, dx64, torch.bfloat16)
    torch.testing.assert_close(dw.double(), dw64, rtol=1e-4, atol=1e-3)
    if uses_kernels_here(device):
        explained = hk.explain(hk.rms_norm, x, (300,), w)
        assert "the fallback of rms_norm_fwd for weight=float32" in str(explained)
        for decisions in (explained.forward, explained.backward):  # then the float32 kernel
            assert [(d.dtype, d.dtypes, d.uses_kernel) for d in decisions] == [
                ("bfloat16", "weight=float32", False), ("float32", None, True)]


def test_default_eps_and_rmsnorm_alias(device):
    x = randn(6, 33, device=device)
    w = randn(33, device=device)
    assert_close(hk.rms_norm(x, [33], w), F.rms_norm(x.double(), [33], w.double()).float(), torch.float32)
    assert_close(hk.rmsnorm(x, w, 1e-3), F.rms_norm(x.double(), [33], w.double(), 1e-3).float(), torch.float32)
    assert_close(hk.rmsnorm(x), F.rms_norm(x.double(), [33]).float(), torch.float32)


def test_non_contiguous_input(device, poison):
    base = randn(40, 24, device=device)
    x = base.t()[:, ::2]
    w = randn(20, device=device)
    assert not x.is_contiguous()
    assert_close(hk.rms_norm(x, (20,), w), F.rms_norm(x.double(), (20,), w.double()), torch.float32)


def test_module_is_a_drop_in(device):
    ours = hk.nn.RMSNorm([4, 8], eps=1e-4, device=device)
    theirs = torch.nn.RMSNorm([4, 8], eps=1e-4, device=device)
    with torch.no_grad():
        theirs.weight.copy_(randn(4, 8, device=device))
    ours.load_state_dict(theirs.state_dict())
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    x = randn(3, 4, 8, device=device)
    assert_close(ours(x), F.rms_norm(x.double(), [4, 8], theirs.weight.double(), 1e-4), torch.float32)
    plain = hk.nn.RMSNorm(8, elementwise_affine=False)
    assert plain.weight is None and list(plain.state_dict()) == []


def test_float64_and_empty_use_pytorch(device):
    x = randn(4, 8, dtype=torch.float64, device=device)
    assert "float64" in str(hk.explain(hk.rms_norm, x, (8,)))
    torch.testing.assert_close(hk.rms_norm(x, (8,)), F.rms_norm(x, (8,)))
    empty = torch.empty(0, 8, device=device)
    assert hk.rms_norm(empty, (8,)).shape == (0, 8)
    assert "empty" in str(hk.explain(hk.rms_norm, empty, (8,)))


@pytest.mark.parametrize("x_dtype, w_dtype", [(torch.bfloat16, torch.float32), (torch.float16, torch.float32),
                                              (torch.float32, torch.bfloat16), (torch.bfloat16, torch.float16)], ids=str)
def test_mixed_dtypes_follow_pytorch(device, x_dtype, w_dtype):
    """Every pair of kernel dtypes: the output in the input's dtype, as PyTorch's (pairs without a
    generated variant run PyTorch's implementation of the op)."""
    x = randn(4, 8, dtype=x_dtype, device=device)
    w = randn(8, dtype=w_dtype, device=device)
    out = hk.rms_norm(x, (8,), w)
    assert out.dtype == x_dtype
    torch.testing.assert_close(out, F.rms_norm(x, (8,), w))


@pytest.mark.parametrize("args", [((5,), None), ((8,), "wrong weight"), ((2, 8), None)])
def test_invalid_inputs_raise_like_pytorch(device, args):
    normalized, weight = args
    x = randn(4, 8, device=device)
    w = randn(3, device=device) if weight else None
    with pytest.raises(Exception) as theirs:
        F.rms_norm(x, normalized, w)
    with pytest.raises(type(theirs.value)):
        hk.rms_norm(x, normalized, w)
