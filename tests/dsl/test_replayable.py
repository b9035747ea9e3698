"""The static check of which generated launchers a direct call may record and replay natively
(build_tools/dsl/replayable.py), and the `REPLAYABLE` index the generated modules carry."""
import inspect

import pytest

from build_tools.dsl.replayable import replayable
from helion_kernels._generated import matmul, rms_norm, softmax

PURE = '''
def launcher(x, weight, eps):
    m, n = x.size()
    out = torch.empty_like(x)
    inv = _new_empty(x, torch.float32, m)
    stats = torch.empty(m, 2, dtype=torch.float32, device=x.device)
    arrivals = _counters(_cdiv(m, 16), x.device)
    x_strides = x.stride()
    aligned = x_strides[1] == 1 and x.data_ptr() % 16 == 0
    if m > 64:
        _launch(_k0, (_cdiv(m, 4),), (m, x, x_strides[0], out, inv, stats, arrivals, weight.stride(0)), (4, aligned), 4, 2)
    else:
        _launch(_k1, (min(_num_sms(x.device), m),), (m, x, eps, out, inv), (_next_power_of_2(max(1, n)),), 8, 1)
    return (out, inv)
'''


def test_a_launcher_of_sizes_allocations_and_launches_is_replayable():
    assert replayable(PURE)


@pytest.mark.parametrize("line", [
    "    total = out.sum(0)",                                     # a host reduction
    "    out = out.to(torch.float32)",                            # a cast
    "    _ensure_allocator()",                                    # a global setting
    "    p = x.data_ptr()",                                       # a pointer as a value
    "    p = x.data_ptr() % 8",                                   # not the alignment Triton keys on
    "    v = x[0].item()",                                        # a value read from the device
    "    for i in range(m):\n        pass",                       # a loop
    "    global _k0",
    "    f = lambda: m",
])
def test_anything_else_is_not(line):
    source = PURE.replace("    return (out, inv)", line + "\n    return (out, inv)")
    assert not replayable(source)


def test_generated_modules_list_their_replayable_launchers():
    for module in (matmul, rms_norm, softmax):
        launchers = {f.__name__: f for variants in module.VARIANTS.values() for f in variants.values()}
        assert module.REPLAYABLE <= launchers.keys()
        for name, launcher in launchers.items():
            assert (name in module.REPLAYABLE) == replayable(inspect.getsource(launcher)), name
    assert any(name.startswith("rms_norm_fwd__") for name in rms_norm.REPLAYABLE)
    host_sums = [f.__name__ for f in rms_norm.VARIANTS["rms_norm_bwd"].values() if ".sum(" in inspect.getsource(f)]
    assert host_sums and not rms_norm.REPLAYABLE & set(host_sums)  # the dweight partials summed on the host
