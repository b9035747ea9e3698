"""compile_only turns Triton launches into compiles (warm-ups) and restores launches after."""
from triton.runtime.jit import JITFunction

from build_tools.autotune.compile_only import compile_only


class RecordingKernel(JITFunction):
    """A JITFunction whose `run` only records how it was asked to run."""

    def __init__(self):
        self.runs = []

    def run(self, *args, grid, warmup, **kwargs):
        self.runs.append((args, grid, warmup, kwargs))


def test_launches_inside_only_compile_and_launch_again_after():
    kernel = RecordingKernel()
    with compile_only():
        kernel[(4,)](1, 2, num_warps=8)
    kernel[(2,)](3)
    assert kernel.runs == [((1, 2), (4,), True, {"num_warps": 8}), ((3,), (2,), False, {})]


def test_launches_are_restored_when_the_compile_raises():
    kernel = RecordingKernel()
    try:
        with compile_only():
            raise RuntimeError("compile failed")
    except RuntimeError:
        pass
    kernel[(1,)]()
    assert kernel.runs[-1][2] is False
