"""Attention forward and backward kernels against float64 references.

Covers causal (torch's top-left aligned mask) and non-causal, query/key lengths that differ both
ways, grouped- and multi-query attention, a custom scale, head dims 64, 128 and one other, and a
single-token case. Tolerances are the ops' own (kernels_src.attention.tolerance / tolerance_bwd):
forward bf16 (1e-2, 1e-2), fp16 (2e-3, 5e-4); backward bf16 (1e-2, 2e-2), fp16 (2e-3, 2e-3) as
(rtol, atol); fp32 forward (1e-2, 1e-2), backward (2e-2, 2e-2), since GPUs run its dots in TF32.
Each case runs under the default and random configs; causal kernels also in one loop with their
mask under a branch (`diagonal_branch`, `dq_diagonal_branch`, `dkv_diagonal_branch`), and forwards
with their accumulator rescaled only where the maximum moves (`lazy_rescale`) and with their row
sums taken by a product with ones (`row_sum_dot`).
bf16 cases run only on GPUs: Triton's interpreter has no bf16 tl.dot.
"""
import re

import pytest
import torch

from kernel_check import check_op, config_with
from kernels_src import attention


def _case(batch, heads, kv_heads, q_len, kv_len, head_dim, causal, scale=None):
    shape = {"B": batch, "H": heads, "Hkv": kv_heads, "Sq": q_len, "Sk": kv_len, "D": head_dim, "causal": causal}
    if scale is not None:
        shape["scale"] = scale
    return shape


CASES = {
    "cpu": [
        _case(1, 2, 2, 17, 17, 64, False),
        _case(1, 2, 2, 17, 17, 64, True),
        _case(2, 4, 2, 33, 20, 64, True),      # GQA, more queries than keys
        _case(1, 3, 1, 9, 40, 64, True),       # MQA, fewer queries than keys
        _case(1, 2, 1, 21, 30, 64, False, scale=0.3),
        _case(1, 1, 1, 1, 1, 64, True),
        _case(1, 1, 1, 19, 23, 128, True),
        _case(1, 2, 2, 13, 11, 32, False),
    ],
    "cuda": [
        _case(2, 8, 8, 1024, 1024, 128, False),
        _case(2, 8, 8, 1024, 1024, 128, True),
        _case(1, 32, 8, 2048, 2048, 128, True),
        _case(2, 4, 2, 1500, 1000, 64, True),
        _case(2, 4, 1, 1000, 1500, 64, True),
        _case(1, 6, 3, 777, 555, 64, False, scale=0.3),
        _case(3, 2, 2, 1, 4097, 128, False),
        _case(1, 4, 4, 300, 301, 96, True),
    ],
}
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
# the causal forward in one key loop, its mask under a branch; 16-row tiles so that the lengths
# above give tiles before the diagonal (unmasked), on it and past a ragged end
DIAGONAL_BRANCH = config_with("diagonal branch", {("diagonal_branch", None): True, ("block_sizes", None): 16})
# the forward's accumulator rescaled only when a tile raises a row's maximum past the slack
LAZY_RESCALE = config_with("lazy rescale", {("lazy_rescale", None): True, ("block_sizes", None): 16})
# the forward's row sums as a product of the probabilities with a tile of ones, in both loop forms
ROW_SUM_DOT = config_with("row sum dot", {("row_sum_dot", None): True, ("block_sizes", None): 16})
ROW_SUM_DOT_BRANCH = config_with("row sum dot, diagonal branch", {("row_sum_dot", None): True,
                                                                  ("diagonal_branch", None): True, ("block_sizes", None): 16})
ROW_SUM_DOT_LAZY = config_with("row sum dot, lazy rescale", {("row_sum_dot", None): True, ("lazy_rescale", None): True,
                                                             ("block_sizes", None): 16})
DIAGONAL_BRANCHES_BWD = config_with("diagonal branches", {("dq_diagonal_branch", None): True,
                                                          ("dkv_diagonal_branch", None): True, ("block_sizes", None): 16})


def _label(op, shape, dtype):
    return f"{op} {shape} {dtype}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(CASES["cpu"])))
def test_forward(device, dtype, case):
    shape = CASES[device][case]
    args = attention.make_fwd_inputs(shape, dtype, device, seed=case)
    check_op(attention.attention_fwd, args, attention.reference_fwd(*args), attention.tolerance(dtype),
             _label("attention_fwd", shape, dtype), output_dtypes=(dtype, torch.float32),
             extra_configs=[LAZY_RESCALE, ROW_SUM_DOT] + ([DIAGONAL_BRANCH, ROW_SUM_DOT_BRANCH] if shape["causal"] else []))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", range(len(CASES["cpu"])))
def test_backward(device, dtype, case):
    shape = CASES[device][case]
    args = attention.make_bwd_inputs(shape, dtype, device, seed=200 + case)
    check_op(attention.attention_bwd, args, attention.reference_bwd(*args), attention.tolerance_bwd(dtype),
             _label("attention_bwd", shape, dtype), output_dtypes=(dtype, dtype, dtype),
             extra_configs=[DIAGONAL_BRANCHES_BWD] if shape["causal"] else [])


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_lazy_rescale_where_tiles_raise_the_maximum(device, dtype, causal):
    """`lazy_rescale` on scores that climb along the first half of the keys by more than the slack
    per 16-key tile (every such tile rescales) and are small after it (no tile does)."""
    shape = _case(1, 2, 2, 45, 150, 64, causal)
    q, k, v, causal, scale = attention.make_fwd_inputs(shape, dtype, device, seed=600)
    direction = torch.ones(64, device=device, dtype=torch.float64) / 8
    climb = torch.where(torch.arange(150, device=device) < 75, torch.arange(150, device=device) * 1.0, 0.0)
    q = (q.double() * 0.1 + direction * 8).to(dtype)
    k = (k.double() * 0.1 + climb[:, None].double() * direction).to(dtype)
    args = (q, k, v, causal, scale)
    check_op(attention.attention_fwd, args, attention.reference_fwd(*args), attention.tolerance(dtype),
             _label("attention_fwd climbing scores", shape, dtype), extra_configs=[LAZY_RESCALE, ROW_SUM_DOT_LAZY],
             random_seeds=())


@pytest.mark.parametrize("causal", [False, True])
def test_strided_inputs(device, causal):
    """q/k/v as [B, H, S, D] views of [B, S, H, D] projections (the common layout): strides honoured."""
    shape = CASES[device][2] | {"causal": causal}
    q, k, v, causal, scale = attention.make_fwd_inputs(shape, torch.float16, device, seed=400)
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    args = (q, k, v, causal, scale)
    check_op(attention.attention_fwd, args, attention.reference_fwd(*args), attention.tolerance(torch.float16),
             _label("attention_fwd strided", shape, torch.float16), random_seeds=())
    grad_out, *_rest = attention.make_bwd_inputs(shape, torch.float16, device, seed=401)
    out, lse = attention.attention_fwd(*args)
    bwd_args = (grad_out.transpose(1, 2).contiguous().transpose(1, 2), q, k, v, out, lse, causal, scale)
    check_op(attention.attention_bwd, bwd_args, attention.reference_bwd(*bwd_args),
             attention.tolerance_bwd(torch.float16), _label("attention_bwd strided", shape, torch.float16),
             random_seeds=())


@pytest.mark.parametrize("causal", [False, True])
def test_no_keys_gives_what_torch_gives(device, causal):
    """Sk == 0: torch's SDPA returns zeros (and logsumexp over nothing is -inf); so must the kernel."""
    shape = _case(1, 2, 1, 5, 0, 64, causal)
    args = attention.make_fwd_inputs(shape, torch.float16, device, seed=500)
    torch_out = torch.nn.functional.scaled_dot_product_attention(*(t.float() for t in args[:3]), is_causal=causal,
                                                                 enable_gqa=True)
    expected_out, expected_lse = attention.reference_fwd(*args)
    torch.testing.assert_close(expected_out, torch_out.double())
    assert torch.all(expected_lse == float("-inf"))
    check_op(attention.attention_fwd, args, (expected_out, expected_lse), attention.tolerance(torch.float16),
             _label("attention_fwd", shape, torch.float16), random_seeds=(), extra_configs=[ROW_SUM_DOT])


def test_reference_matches_torch_sdpa(device):
    """The float64 references follow torch's conventions (top-left causal mask, GQA head mapping)."""
    shape = _case(2, 4, 2, 9, 13, 64, True, scale=0.2)
    q, k, v, causal, scale = attention.make_fwd_inputs(shape, torch.float32, device, seed=300)
    q, k, v = (t.to(torch.float64).requires_grad_() for t in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                                enable_gqa=True)
    out, lse = attention.reference_fwd(q.detach(), k.detach(), v.detach(), causal, scale)
    torch.testing.assert_close(out, expected.detach())
    grad_out = torch.randn_like(expected)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad_out)
    grads = attention.reference_bwd(grad_out, q.detach(), k.detach(), v.detach(), out, lse, causal, scale)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want)



def _unscaled(name: str, source: str, seen: frozenset = frozenset()) -> bool:
    """Whether `name` of the generated source holds scores as the dot left them: the dot, a copy of
    it, or one with entries set to -inf (every assignment to the name, through copies; a branch's
    reassignment reads the name itself)."""
    if name.startswith("dot_") or name in seen:
        return True
    values = re.findall(rf"^\s*{name} = (.*)$", source, re.M)
    sources = [re.fullmatch(r"(\w+)|tl\.where\(.*, (\w+), float\(\"-inf\"\)\)", value) for value in values]
    return bool(values) and all(m and _unscaled(m.group(1) or m.group(2), source, seen | {name}) for m in sources)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_scales_inside_the_exponential(causal):
    """The forward's row maxima reduce the unscaled scores and are scaled per row, so that each
    probability's argument, `dot * qk_scale - max`, is one fused multiply-add (no scaled copy of
    the scores feeds the maximum)."""
    q, k, v = (torch.randn(1, 2, 40, 64) for _ in range(3))
    for branch in (False, True) if causal else (False,):
        bound = attention.attention_fwd.bind((q, k, v, causal, 0.125))
        _, config = config_with("", {("diagonal_branch", None): branch})(bound)
        source = bound.to_triton_code(config)
        maxima = re.findall(r"(red_\d+) = \(tl\.reduce\((?:tl\.where\(\w+(?:\[[^\]]*\])?, )?(\w+)[^\n]*, 1, _max_\w+\)", source)
        assert len(maxima) == (1 if branch or not causal else 2), maxima  # one per key loop
        for reduced, scores in maxima:
            assert _unscaled(scores, source), scores
            assert re.search(rf"= \({reduced} \* qk_scale\)$", source, re.M), reduced
            uses = re.findall(rf"^\s*(\w+) = \({scores} \* qk_scale\)$", source, re.M)
            assert len(uses) == 1 and re.search(rf"= \({uses[0]} - \w+\)$", source, re.M), uses
