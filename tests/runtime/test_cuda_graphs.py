"""On the GPU: the public ops captured in a CUDA graph and replayed on new inputs, as a decode step
that captures its layers runs them (float64 references, outputs poisoned before each replay).
Split-K matmuls (16/64 x 4096 x 4096 bf16 take them in the sm_90 table) check that the arrival
counters a graph owns are left zeroed by each replay and that the stream's own counters still work
after replays; make_graphed_callables checks the autograd backward captured with its forward."""
import math

import pytest
import torch
import torch.nn.functional as F

import helion_kernels as hk
from runtime_helpers import TOLERANCE

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
BF16 = torch.bfloat16


def _randn(generator, *shape, scale=1.0):
    return (torch.randn(*shape, generator=generator, device="cuda") * scale).to(BF16)


def _rmsnorm_ref(x, w):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + 1e-6) * w.double()


# name: (function, inputs(generator), kwargs, float64 reference, tolerance scale)
CASES = {
    "rmsnorm 1x4096": (hk.rmsnorm, lambda g: (_randn(g, 1, 4096), _randn(g, 4096)), {"eps": 1e-6},
                       _rmsnorm_ref, 1.0),
    "rmsnorm 37x1000": (hk.rmsnorm, lambda g: (_randn(g, 37, 1000), _randn(g, 1000)), {"eps": 1e-6},
                        _rmsnorm_ref, 1.0),
    "softmax 1x4096": (hk.softmax, lambda g: (_randn(g, 1, 4096, scale=4.0),), {"dim": -1},
                       lambda x: torch.softmax(x.double(), -1), 1.0),
    "softmax 16x32000": (hk.softmax, lambda g: (_randn(g, 16, 32000, scale=4.0),), {"dim": -1},
                         lambda x: torch.softmax(x.double(), -1), 1.0),
    "matmul 16x4096x4096 (split-K)": (hk.matmul, lambda g: (_randn(g, 16, 4096), _randn(g, 4096, 4096, scale=1 / 64)),
                                      {}, lambda a, b: a.double() @ b.double(), 4.0),
    "matmul 64x4096x4096 (split-K)": (hk.matmul, lambda g: (_randn(g, 64, 4096), _randn(g, 4096, 4096, scale=1 / 64)),
                                      {}, lambda a, b: a.double() @ b.double(), 4.0),
    "matmul 37x45x19": (hk.matmul, lambda g: (_randn(g, 37, 45), _randn(g, 45, 19)), {},
                        lambda a, b: a.double() @ b.double(), math.sqrt(45)),
    "linear 16x4096x4096": (hk.linear, lambda g: (_randn(g, 16, 4096), _randn(g, 4096, 4096, scale=1 / 64),
                                                  _randn(g, 4096)),
                            {}, lambda x, w, b: F.linear(x.double(), w.double(), b.double()), 4.0),
    "sdpa B1 H4 S100 D64 causal": (hk.scaled_dot_product_attention,
                                   lambda g: tuple(_randn(g, 1, 4, 100, 64) for _ in range(3)), {"is_causal": True},
                                   lambda q, k, v: F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                                                  is_causal=True), 1.0),
}


def _check(actual, expected, scale):
    rtol, atol = TOLERANCE[BF16]
    assert actual.dtype == BF16 and actual.shape == expected.shape
    torch.testing.assert_close(actual.double(), expected, rtol=rtol, atol=atol * scale)


def _warm_up(fn, calls=2):
    """Calls on a side stream before capture (compiles the kernels, fills the dispatch caches)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(calls):
            fn()
    torch.cuda.current_stream().wait_stream(side)


@pytest.mark.parametrize("name", list(CASES))
def test_captured_call_replays_on_new_inputs(name):
    function, make_inputs, kwargs, reference, scale = CASES[name]
    generator = torch.Generator(device="cuda").manual_seed(0)
    static = make_inputs(generator)
    report = hk.explain(function, *static, **kwargs)
    assert report.uses_kernels, str(report)
    _warm_up(lambda: function(*static, **kwargs))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = function(*static, **kwargs)
    for _ in range(2):
        fresh = make_inputs(generator)
        for target, source in zip(static, fresh):
            target.copy_(source)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        _check(out, reference(*fresh), scale)
    # back-to-back replays on unchanged inputs agree; a counter left nonzero would change the result
    first = out.clone()
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, first)
    # the same call outside the graph (the stream's own buffers) after the replays
    _check(function(*fresh, **kwargs), reference(*fresh), scale)


def _grads64(fn, inputs, grad_out):
    leaves = [t.detach().double().requires_grad_() for t in inputs]
    return torch.autograd.grad(fn(*leaves), leaves, grad_out.double())


@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
def test_graphed_callable_forward_and_backward(name):
    generator = torch.Generator(device="cuda").manual_seed(0)
    n = 4096
    if name == "rmsnorm":
        def ours(x, w):
            return hk.rmsnorm(x, w, 1e-6)
        reference = _rmsnorm_ref
        sample = (_randn(generator, 8, n).requires_grad_(), _randn(generator, n).requires_grad_())
    else:
        def ours(x):
            return hk.softmax(x, -1)

        def reference(x):
            return torch.softmax(x.double(), -1)
        sample = (_randn(generator, 8, n, scale=4.0).requires_grad_(),)
    graphed = torch.cuda.make_graphed_callables(ours, sample)
    for _ in range(2):
        inputs = tuple(_randn(generator, *t.shape, scale=4.0 if name == "softmax" else 1.0).requires_grad_()
                       for t in sample)
        grad_out = _randn(generator, 8, n)
        out = graphed(*inputs)
        got = torch.autograd.grad(out, inputs, grad_out)
        _check(out, reference(*[t.detach() for t in inputs]), 1.0)
        for actual, expected in zip(got, _grads64(reference, inputs, grad_out)):
            # dweight sums 8 rows of products
            _check(actual, expected, math.sqrt(8))
