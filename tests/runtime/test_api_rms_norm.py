"""hk.rms_norm / hk.rmsnorm / hk.nn.RMSNorm against torch (float64 reference), values and gradients."""
import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from runtime_helpers import TOLERANCE, assert_close, double_leaf, grads, randn, uses_kernels_here

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


def test_mixed_dtypes_follow_pytorch(device):
    x = randn(4, 8, dtype=torch.bfloat16, device=device)
    w = randn(8, device=device)
    torch.testing.assert_close(hk.rms_norm(x, (8,), w), F.rms_norm(x, (8,), w))


@pytest.mark.parametrize("args", [((5,), None), ((8,), "wrong weight"), ((2, 8), None)])
def test_invalid_inputs_raise_like_pytorch(device, args):
    normalized, weight = args
    x = randn(4, 8, device=device)
    w = randn(3, device=device) if weight else None
    with pytest.raises(Exception) as theirs:
        F.rms_norm(x, normalized, w)
    with pytest.raises(type(theirs.value)):
        hk.rms_norm(x, normalized, w)
