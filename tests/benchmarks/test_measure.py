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
    monkeypatch.setattr(impls, "forward", lambda family, impl, dtypes="": DoubleIntoGrad.apply)
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


def test_decode_rows_with_s_time_3d_inputs():
    from benchmarks import plan
    rows = [r for r in plan.build() if r.mode == "host" and "S" in r.shape]
    assert {(r.op, r.shape["M"]) for r in rows} == {(op, m) for op in ("rmsnorm_fwd", "softmax_fwd")
                                                    for m in plan.DECODE_ROWS}
    for row in rows:
        args = measure.make_inputs(row, torch.float32, torch.device("cpu"))
        assert args[0].shape == (row.shape["M"], 1, 4096)
        assert list(row.shape) == ["M", "S", "N"]  # the table's label reads M×S×N
    tiny = [r for r in plan.build(tiny=True) if r.mode == "host" and "S" in r.shape]
    assert len(tiny) == len({(r.op, tuple(r.shape.items())) for r in tiny}) > 0


def test_every_family_builds_its_inputs():
    from benchmarks import plan
    built = set()
    for row in plan.build(tiny=True):
        if row.kind == "case" and (row.op, row.mode) not in built:
            built.add((row.op, row.mode))
            args = measure.make_inputs(row, torch.float32, torch.device("cpu"))
            assert isinstance(args[0], torch.Tensor) and args[0].numel() > 0
    assert {op for op, _ in built} >= {"rmsnorm_fwd", "softmax_bwd", "matmul", "attention_fwd", "attention_bwd"}


def test_mixed_dtype_rows_time_their_dtypes():
    """The mixed-dtype rows: softmax of bf16 rows written in float32 (each implementation's forward
    returns float32, as CUDA autocast's softmax) and RMSNorm with a float32 weight (bf16 output,
    float32 dweight); their bytes count the wider arguments."""
    from benchmarks import plan
    rows = [r for r in plan.build(tiny=True) if r.dtypes]
    assert {(r.op, r.dtypes) for r in rows} == {(f"{family}_{d}", dtypes) for family, dtypes in
                                              (("softmax", "out_dtype=float32"), ("rmsnorm", "weight=float32"))
                                              for d in ("fwd", "bwd")}
    for row in rows:
        args = measure.make_inputs(row, torch.bfloat16, torch.device("cpu"))
        for impl in ("ours", "eager"):
            forward = impls.forward(row.family, impl, row.dtypes)
            out = forward(*args)
            assert out.dtype == (torch.float32 if row.family == "softmax" else torch.bfloat16)
        plain = measure.cost(row.op, row.shape, torch.bfloat16)[1]
        assert measure.cost(row.op, row.shape, torch.bfloat16, row.dtypes)[1] > plain
    rms = next(r for r in rows if r.op == "rmsnorm_bwd")
    args = measure.make_inputs(rms, torch.bfloat16, torch.device("cpu"))
    _, dx = measure.timed_call(rms, "ours", args)
    assert args[1].dtype == torch.float32 and dx.dtype == torch.bfloat16
