"""On the GPU: native replay of recorded direct calls (helion_kernels/_direct, launch_helpers'
`_record`, build_tools/dsl/native_replay.py). A key's first call stores its plan, the second is
recorded, later calls with the same argument properties run from C: with new data and pointers
each time, and without the Python plan. Other strides, alignment, values, grad, hooks, poisoned
allocations, streams and CUDA graphs are checked against float64 references."""
import pytest
import torch
import triton

import helion_kernels as hk
from helion_kernels import _direct
from helion_kernels._dispatch import DISPATCHER
from runtime_helpers import TOLERANCE

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
BF16 = torch.bfloat16


def _close(got, want):
    rtol, atol = TOLERANCE[got.dtype]
    torch.testing.assert_close(got.double(), want, atol=atol, rtol=rtol)


def _softmax_ref(x):
    return torch.softmax(x.double(), -1)


def _rms_ref(x, w, eps):
    x64 = x.double()
    return x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps) * w.double()


@pytest.fixture(autouse=True)
def fresh_plans():
    DISPATCHER.reload()
    with torch.no_grad():
        yield
    DISPATCHER.reload()


def _no_python_plans(monkeypatch):
    """Fail any call that reaches the Python direct path (a replayed call never does)."""
    def refuse(key, *args):
        raise AssertionError(f"the Python direct path ran for {key[0]}")

    monkeypatch.setattr(_direct, "run", refuse)


def _recorded(tag) -> int:
    return len(DISPATCHER.replays.get(tag, ()))


def test_softmax_calls_after_the_second_are_replayed(monkeypatch):
    shape = (7, 3001)
    for _ in range(2):
        x = torch.randn(shape, device="cuda", dtype=BF16) * 4
        _close(hk.softmax(x, -1), _softmax_ref(x))
    assert _recorded((hk.softmax, -1, None)) == 1
    _no_python_plans(monkeypatch)
    outputs = []
    for _ in range(3):
        x = torch.randn(shape, device="cuda", dtype=BF16) * 4
        out = hk.softmax(x, -1)
        assert out.shape == x.shape and out.dtype == BF16 and out.is_contiguous()
        _close(out, _softmax_ref(x))
        outputs.append(out)
    assert len({o.data_ptr() for o in outputs}) == 3


@pytest.mark.parametrize("entry", ["rms_norm", "rmsnorm"])
def test_rms_norm_replays_per_eps_value(monkeypatch, entry):
    call = (lambda x, w, eps: hk.rms_norm(x, (x.shape[-1],), w, eps)) if entry == "rms_norm" else hk.rmsnorm
    x, w = torch.randn(16, 4096, device="cuda", dtype=BF16), torch.randn(4096, device="cuda", dtype=BF16)
    for eps in (1e-6, 1e-6, 0.5, 0.5):
        _close(call(x, w, eps), _rms_ref(x, w, eps))
    _no_python_plans(monkeypatch)
    for eps in (1e-6, 0.5):
        x = torch.randn(16, 4096, device="cuda", dtype=BF16)
        _close(call(x, w, eps), _rms_ref(x, w, eps))


def test_other_strides_and_alignment_take_the_python_path():
    base = torch.randn(9, 4104, device="cuda", dtype=BF16)
    x = base[:, :4096]  # the recorded strides: (4104, 1)
    for _ in range(3):
        _close(hk.softmax(x, -1), _softmax_ref(x))
    contiguous = x.contiguous()  # same sizes, strides (4096, 1)
    _close(hk.softmax(contiguous, -1), _softmax_ref(contiguous))
    shifted = base[:, 1:4097]  # same sizes and strides, 2-byte offset: not 16-byte aligned
    assert _direct.replay((hk.softmax, -1, None), shifted) is _direct.MISSING
    _close(hk.softmax(shifted, -1), _softmax_ref(shifted))
    assert _direct.replay((hk.softmax, -1, None), base[:, :4096]) is not _direct.MISSING


def test_grad_hooks_and_replaced_allocations_are_not_replayed(monkeypatch):
    x = torch.randn(4, 512, device="cuda", dtype=BF16)
    tag = (hk.softmax, -1, None)
    for _ in range(3):
        hk.softmax(x, -1)
    assert _direct.replay(tag, x) is not _direct.MISSING
    with torch.enable_grad():
        leaf = x.clone().requires_grad_()
        assert _direct.replay(tag, leaf) is _direct.MISSING
        out = hk.softmax(leaf, -1)
        assert out.grad_fn is not None
    seen = []
    triton.knobs.runtime.launch_enter_hook = lambda metadata: seen.append(metadata)
    try:
        assert _direct.replay(tag, x) is _direct.MISSING
        _close(hk.softmax(x, -1), _softmax_ref(x))
    finally:
        triton.knobs.runtime.launch_enter_hook = None
    assert seen
    for owner, name in ((torch, "empty_like"), (torch, "empty"), (torch.Tensor, "new_empty")):
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, real=real, **k: real(*a, **k))
        assert _direct.replay(tag, x) is _direct.MISSING
        monkeypatch.undo()
    assert _direct.replay(tag, x) is not _direct.MISSING


def test_replay_runs_on_the_current_stream_and_in_cuda_graphs():
    x = torch.randn(64, 4096, device="cuda", dtype=BF16)
    for _ in range(3):
        hk.softmax(x, -1)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(10_000_000)  # a replay on the default stream would finish first and be seen early
        y = torch.randn(64, 4096, device="cuda", dtype=BF16)
        out = hk.softmax(y, -1)
    stream.synchronize()
    _close(out, _softmax_ref(y))
    static = torch.randn(64, 4096, device="cuda", dtype=BF16)
    hk.softmax(static, -1)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = hk.softmax(static, -1)
    for _ in range(2):
        static.copy_(torch.randn(64, 4096, device="cuda", dtype=BF16))
        graph.replay()
        torch.cuda.synchronize()
        _close(captured, _softmax_ref(static))


@pytest.mark.parametrize("biased", [True, False])
def test_linear_is_replayed(monkeypatch, biased):
    a = torch.randn(16, 520, device="cuda", dtype=BF16)
    w = torch.randn(777, 520, device="cuda", dtype=BF16)
    bias = torch.randn(777, device="cuda", dtype=BF16) if biased else None
    for _ in range(2):
        hk.linear(a, w, bias)
    assert _recorded(hk.linear) == 1  # without a bias the plan passes `w.t()`: recorded as w
    _no_python_plans(monkeypatch)
    for _ in range(2):
        a, w = torch.randn(16, 520, device="cuda", dtype=BF16), torch.randn(777, 520, device="cuda", dtype=BF16)
        want = a.double() @ w.double().t() + (bias.double() if biased else 0)
        torch.testing.assert_close(hk.linear(a, w, bias).double(), want, atol=0.5, rtol=2e-2)


def _matmul_close(got, a, b):
    torch.testing.assert_close(got.double(), a.double() @ b.double(), atol=1.0, rtol=2e-2)


@pytest.mark.parametrize("m", [1, 16])
def test_split_k_matmul_replays_with_its_streams_counters(monkeypatch, m):
    b = torch.randn(4096, 4096, device="cuda", dtype=BF16)
    for _ in range(2):
        a = torch.randn(m, 4096, device="cuda", dtype=BF16)
        _matmul_close(hk.matmul(a, b), a, b)
    assert _recorded(hk.matmul) == 1
    for _ in range(3):  # each call leaves the counters zeroed for the next
        a = torch.randn(m, 4096, device="cuda", dtype=BF16)
        assert _direct.replay(hk.matmul, a, b) is not _direct.MISSING
        _matmul_close(hk.matmul(a, b), a, b)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # another stream has other counters: the Python path
        assert _direct.replay(hk.matmul, a, b) is _direct.MISSING
        side = hk.matmul(a, b)
    stream.synchronize()
    _matmul_close(side, a, b)
    static = torch.randn(m, 4096, device="cuda", dtype=BF16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # captured: the graph's own counters, not the replayed plan's
        captured = hk.matmul(static, b)
    for _ in range(2):
        static.copy_(torch.randn(m, 4096, device="cuda", dtype=BF16))
        graph.replay()
        torch.cuda.synchronize()
        _matmul_close(captured, static, b)
    _no_python_plans(monkeypatch)
    a = torch.randn(m, 4096, device="cuda", dtype=BF16)
    _matmul_close(hk.matmul(a, b), a, b)


THREE_D = ["rmsnorm", "rms_norm 2-D shape", "softmax", "linear", "linear without bias", "matmul"]


def _three_d_call(name):
    """(tag, call(x), float64 reference(x), input shape) of a public function whose plan views a
    3-D input as rows and the output back."""
    w = torch.randn(4096, device="cuda", dtype=BF16)
    weight = torch.randn(777, 520, device="cuda", dtype=BF16) / 520 ** 0.5
    bias = torch.randn(777, device="cuda", dtype=BF16)
    other = torch.randn(520, 777, device="cuda", dtype=BF16) / 520 ** 0.5
    return {
        "rmsnorm": (hk.rmsnorm, lambda x: hk.rmsnorm(x, w, 1e-6), lambda x: _rms_ref(x, w, 1e-6), (3, 5, 4096)),
        "rms_norm 2-D shape": ((hk.rms_norm, (8, 512)), lambda x: hk.rms_norm(x, (8, 512), w.view(8, 512), 1e-6),
                               lambda x: _rms_ref(x.reshape(3, 4096), w, 1e-6).view(x.shape), (3, 8, 512)),
        "softmax": ((hk.softmax, -1, None), lambda x: hk.softmax(x, -1), _softmax_ref, (2, 7, 3001)),
        "linear": (hk.linear, lambda x: hk.linear(x, weight, bias),
                   lambda x: x.double() @ weight.double().t() + bias.double(), (2, 9, 520)),
        "linear without bias": (hk.linear, lambda x: hk.linear(x, weight),
                                lambda x: x.double() @ weight.double().t(), (2, 9, 520)),
        "matmul": (hk.matmul, lambda x: hk.matmul(x, other), lambda x: x.double() @ other.double(), (2, 9, 520)),
    }[name]


@pytest.mark.parametrize("name", THREE_D)
def test_three_d_inputs_are_replayed(monkeypatch, name):
    tag, call, reference, shape = _three_d_call(name)
    products = name.startswith(("linear", "matmul"))
    tolerance = dict(atol=0.5, rtol=2e-2) if products else dict(zip(("rtol", "atol"), TOLERANCE[BF16]))
    for _ in range(2):  # the first call stores the plan, the second is recorded
        call(torch.randn(shape, device="cuda", dtype=BF16))
    assert _recorded(tag) == 1
    _no_python_plans(monkeypatch)
    outputs = []
    for _ in range(3):
        x = torch.randn(shape, device="cuda", dtype=BF16)
        out = call(x)
        want = reference(x)
        assert out.shape == want.shape and out.dtype == BF16 and out.is_contiguous()
        torch.testing.assert_close(out.double(), want, **tolerance)
        outputs.append(out)
    assert len({o.data_ptr() for o in outputs}) == 3
    monkeypatch.undo()
    # the same shape with other strides (its rows are a copy): the Python path, recorded, not replayed
    for _ in range(2):
        x = torch.randn(shape[1], shape[0], shape[2], device="cuda", dtype=BF16).transpose(0, 1)
        torch.testing.assert_close(call(x).double(), reference(x), **tolerance)
    assert _recorded(tag) == 1


def test_a_replayed_plan_moves_to_the_front_of_its_tag(monkeypatch):
    """Plans are matched from the front and each replayed one moves there: a shape in use is found
    after only the shapes used since, however many were recorded before it."""
    tag = (hk.softmax, -1, None)
    shapes = [(3, 100 + 7 * i) for i in range(5)]
    for shape in shapes:
        x = torch.randn(shape, device="cuda", dtype=BF16)
        for _ in range(3):
            hk.softmax(x, -1)
    plans = list(DISPATCHER.replays[tag])
    assert len(plans) == len(shapes)  # newest first: the first shape's plan is last
    _no_python_plans(monkeypatch)
    for order in ([0], [2, 0], [4, 4, 1]):
        for i in order:
            x = torch.randn(shapes[i], device="cuda", dtype=BF16) * 4
            _close(hk.softmax(x, -1), _softmax_ref(x))
            assert DISPATCHER.replays[tag][0] is plans[len(shapes) - 1 - i]
    assert sorted(map(id, DISPATCHER.replays[tag])) == sorted(map(id, plans))


def test_reload_forgets_recorded_plans():
    x = torch.randn(3, 100, device="cuda", dtype=BF16)
    for _ in range(3):
        hk.softmax(x, -1)
    assert DISPATCHER.replays
    DISPATCHER.reload()
    assert not DISPATCHER.replays and _direct.replay((hk.softmax, -1, None), x) is _direct.MISSING
