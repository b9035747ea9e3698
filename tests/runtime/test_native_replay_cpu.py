"""The native replay's parts that run without a GPU (build_tools/dsl/native_replay.py, compiled
here as on a GPU host): it finds the tensor handle inside torch.Tensor objects of this torch
build, answers MISSING for tags it has no plan of, and makes no plan where no CUDA driver is
loaded; a module that cannot replay runs a recorded call's plan as it is. tests/runtime/
test_native_replay.py replays calls on the GPU."""
import functools
import os

import pytest
import torch

from helion_kernels import _direct
from helion_kernels._generated import softmax as generated

LIBRARY = os.path.join(os.path.dirname(torch.__file__), "lib")


@functools.cache
def _native():
    native = generated._build_native()
    assert native is not None, "the native launch's C source did not build"
    assert generated._native_new_empty(native) is not None
    return native


def _state():
    return generated._replay_state(_direct.MISSING)


@pytest.mark.parametrize("probe", [torch.ones(1), torch.nn.Parameter(torch.randn(3, 4)), torch.empty(0)])
def test_the_tensor_handle_is_found_in_this_torch_build(probe):
    assert generated._native_replay_init(_native())
    assert _native().replay_init(probe, probe._cdata, os.path.join(LIBRARY, "libtorch_cpu.so"),
                                 os.path.join(LIBRARY, "libtorch_cuda.so"))


def test_tags_without_plans_are_missing():
    native, state = _native(), _state()
    generated._native_replay_init(native)
    x = torch.randn(3, 5)
    assert native.replay(state, {}, ("tag", -1), x) is _direct.MISSING
    assert native.replay(state, {}, ("unhashable", [1]), x) is _direct.MISSING
    assert native.replay(state, {("tag", -1): []}, ("tag", -1), x, None, 1e-6) is _direct.MISSING
    with pytest.raises(TypeError):
        native.replay(state, [], ("tag",), x)


def test_no_plan_is_made_without_a_cuda_driver():
    if torch.cuda.is_available():
        pytest.skip("a CUDA driver is loaded here")
    native = _native()
    x = torch.randn(3, 5)
    out = torch.empty_like(x)
    launch = (b"\0" * 20 + b"pp", (1, 1, 1), (x, out))
    assert native.replay_plan(_state(), (x,), (out,), (launch,), 0, 0, False, None, (), (), 0) is None


def test_a_module_that_cannot_replay_just_runs_the_plan(monkeypatch):
    monkeypatch.setattr(generated, "_replay", False)
    calls = []
    out, recorded = generated._record(lambda *args: calls.append(args) or "out", (1, 2), _direct.MISSING)
    assert (out, recorded, calls) == ("out", None, [(1, 2)])


def test_a_launched_view_stands_for_the_one_argument_it_starts_at():
    x, w = torch.randn(4, 6), torch.randn(5, 6)
    assert generated._argument_of_view(w.t(), (x, w, None, 1e-6)) is w
    shifted = w[1:]
    assert generated._argument_of_view(shifted, (x, w)) is shifted  # another first element
    alias = w.view(30)
    assert generated._argument_of_view(w.t(), (w, alias)) is not w  # two candidates: none chosen
    other = torch.randn(6, 5)
    assert generated._argument_of_view(other, (x, w)) is other


def test_an_output_viewing_an_allocation_in_another_shape_stands_for_it():
    out, inv_rms = torch.empty(6, 4), torch.empty(6)
    rows = out.view(2, 3, 4)  # a 3-D input's rows, viewed back
    assert generated._allocation_of_view(rows, [out, inv_rms], (rows,)) is out
    assert generated._allocation_of_view(out, [out, inv_rms], (out,)) is None  # an allocation itself
    assert generated._allocation_of_view(rows, [out, inv_rms], (rows, out)) is None  # out returned too
    assert generated._allocation_of_view(out[:3], [out], (out[:3],)) is None  # fewer elements
    assert generated._allocation_of_view(out.t(), [out], (out.t(),)) is None  # not contiguous
    assert generated._allocation_of_view(out.view(torch.int32), [out], (out.view(torch.int32),)) is None
    assert generated._allocation_of_view(torch.empty(2, 3, 4), [out], ()) is None  # other memory


def test_an_unhashable_launch_argument_goes_to_the_python_path():
    """A host-built TMA descriptor (a dataclass, unhashable) cannot key the native launch's entries:
    the launch hands the call to its fallback, which keys descriptors by their specialization."""
    import triton

    calls = []

    class Kernel:
        pre_run_hooks = []

    kernel = Kernel()
    state = ({id(kernel): (kernel, {})}, lambda *call: calls.append(call) or "fallback", lambda: 0,
             lambda device: 0, triton.knobs.runtime, triton.knobs.compilation, triton.knobs.HookChain,
             torch.Tensor)
    unhashable = [1, 2]
    assert _native().launch(state, kernel, (1,), (3, unhashable), (), 4, 2) == "fallback"
    assert calls == [(kernel, (1,), (3, unhashable), (), 4, 2)]


def test_a_kept_plan_goes_first_and_the_last_drops_beyond_the_limit(monkeypatch):
    """The replay moves each plan it runs to its tag's front (on the GPU: test_native_replay.py),
    so a kept plan goes first and the plan at the end, the least recently used, is dropped."""
    monkeypatch.setattr(_direct, "REPLAYS", {})
    monkeypatch.setattr(_direct, "replay", lambda tag, *args: _direct.MISSING)  # bound already
    tag = ("tag", -1)
    plans = [object() for _ in range(_direct.REPLAYS_PER_TAG + 2)]
    for plan in plans:
        _direct._keep(tag, plan, generated)
    kept = _direct.REPLAYS[tag]
    assert len(kept) == _direct.REPLAYS_PER_TAG
    assert kept == plans[::-1][:_direct.REPLAYS_PER_TAG]
