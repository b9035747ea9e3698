"""The benchmark report's timed callables on the CPU: the accuracy check's operand of a backward row
survives later timed calls, even when a peer's backward writes its result into the incoming gradient."""
import torch

from benchmarks import impls, measure
from benchmarks.plan import Row


class DoubleIntoGrad(torch.autograd.Function):
    """y = 2 x whose backward returns its incoming gradient's storage, as Liger's in-place RMSNorm."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad.mul_(2)


def test_backward_snapshot_survives_an_in_place_peer(monkeypatch):
    monkeypatch.setattr(impls, "forward", lambda family, impl: DoubleIntoGrad.apply)
    row = Row("softmax_bwd", {"M": 3, "N": 5})
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    fn, first = measure.timed_call(row, "peer", (x,))
    expected = first.clone()
    grad_seen = fn()[0]                     # the peer overwrites its incoming gradient again
    assert torch.equal(grad_seen, expected * 2)
    assert torch.equal(first, expected)     # the snapshot kept the first call's dx
    generator = torch.Generator().manual_seed(1)
    incoming = torch.randn(3, 5, generator=generator).to(torch.float64)
    assert torch.equal(first, incoming * 2)
