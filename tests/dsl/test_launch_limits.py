"""Launch limits of the GPU that the interpreter does not enforce: CUDA's 65535 programs on grid
axes y and z (pid_type "xyz" folds a larger grid into x), and Triton's 32-bit offsets into the
global scratch that holds every program's in-kernel tensor descriptors (launches that would pass
2 GiB of it must index through pointers). The launches are recorded from the generated launcher;
the folded kernels also run, with the launcher's y/z limit lowered so that small grids fold."""
import inspect
import json
import re

import pytest
import torch
import triton

import build_tools.dsl as helion
from build_tools.dsl.kernel import load_module

from ._harness import compare, randn, results_without_interpreter
from .test_config_space import add_2d, add_3d
from .test_matmul import matmul_addmm
from .test_peeled_loops import row_max_and_softmax_sum

CUDA_GRID_YZ = 65535


def launches_of(kernel, args, config, run: bool = True, max_grid_yz: int | None = None):
    """Calls the launcher generated for `config` on `args`; returns (result, [(grid, constants)] per
    launch). With `run` false, kernels are not executed; `max_grid_yz` lowers the y/z limit."""
    source = kernel.bind(args).to_triton_code(config)
    module = load_module(source)  # shared with other loads of the same source: patched for this call only
    launched = []
    launch, limit = module._launch, getattr(module, "_MAX_GRID_YZ", None)

    def record(fn, grid, fn_args, constants, num_warps, num_stages):
        names = list(inspect.signature(fn.fn).parameters)[-len(constants):] if constants else []
        launched.append((grid, dict(zip(names, constants))))
        if run:
            launch(fn, grid, fn_args, constants, num_warps, num_stages)

    module._launch = record
    if max_grid_yz is not None:
        module._MAX_GRID_YZ = max_grid_yz
    try:
        return getattr(module, kernel.name)(*args), launched
    finally:
        module._launch = launch
        if limit is not None:
            module._MAX_GRID_YZ = limit


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_xyz_grid_beyond_the_y_limit_folds_into_x(order):
    x = torch.zeros(2, CUDA_GRID_YZ + 100)
    config = helion.Config(block_sizes=[1, 1], pid_type="xyz", loop_orders=[order])
    _, launched = launches_of(add_2d, (x, x), config, run=False)
    ((grid, constants),) = launched
    assert all(count <= CUDA_GRID_YZ for count in grid[1:])
    if order == [0, 1]:  # y would have been 65635 programs
        assert grid == (2 * (CUDA_GRID_YZ + 100),) and constants["_XYZ_FOLDED"]
    else:  # x takes the long dim: nothing to fold
        assert grid == (CUDA_GRID_YZ + 100, 2) and not constants["_XYZ_FOLDED"]


@pytest.mark.parametrize("order", [[0, 1], [1, 0]])
def test_folded_xyz_grid_2d(order, device):
    x, y = randn(37, 45, device=device), randn(37, 45, device=device)
    config = helion.Config(block_sizes=[8, 4], pid_type="xyz", loop_orders=[order])
    out, launched = launches_of(add_2d, (x, y), config, max_grid_yz=3)
    assert len(launched[0][0]) == 1 and launched[0][1]["_XYZ_FOLDED"]
    compare(out, x + y)


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
def test_folded_xyz_grid_3d(order, device):
    x, y = randn(3, 10, 19, device=device), randn(3, 10, 19, device=device)
    config = helion.Config(block_sizes=[2, 4, 8], pid_type="xyz", loop_orders=[order])
    out, launched = launches_of(add_3d, (x, y), config, max_grid_yz=1)
    assert len(launched[0][0]) == 1 and launched[0][1]["_XYZ_FOLDED"]
    compare(out, x * y)


def test_small_xyz_grids_keep_their_axes(device):
    x, y = randn(37, 45, device=device), randn(37, 45, device=device)
    config = helion.Config(block_sizes=[8, 4], pid_type="xyz")
    out, launched = launches_of(add_2d, (x, y), config)
    assert launched[0][0] == (5, 12) and not launched[0][1]["_XYZ_FOLDED"]
    compare(out, x + y)


def tma_flags(constants: dict) -> list:
    return [value for name, value in constants.items() if name.startswith("_TMA_")]


def test_tensor_descriptors_need_scratch_within_the_budget():
    config = helion.Config(block_sizes=[1, 32], indexing="tensor_descriptor", pid_type="flat")
    small = torch.zeros(16, 64)
    _, ((_, constants),) = launches_of(add_2d, (small, small), config, run=False)
    assert tma_flags(constants) == [True] * 3
    # 2^21 programs of 3 descriptors need 768 MiB of scratch (the budget is 256 MiB)
    large = torch.empty(8192, 8192)
    _, ((_, constants),) = launches_of(add_2d, (large, large), config, run=False)
    assert tma_flags(constants) == [False] * 3
    # persistent programs are few, whatever the size
    persistent = helion.Config(block_sizes=[1, 32], indexing="tensor_descriptor", pid_type="persistent_blocked")
    _, ((_, constants),) = launches_of(add_2d, (large, large), persistent, run=False)
    assert tma_flags(constants) == [True] * 3


RMS_NORM_AUTOTUNE_FAILURE = {
    "block_sizes": [1, 1], "flatten_loops": [True, False],
    "indexing": ["pointer", "tensor_descriptor", "tensor_descriptor", "block_ptr", "tensor_descriptor", "block_ptr"],
    "l2_groupings": [1, 1], "load_eviction_policies": ["", "first", "last"], "loop_orders": [[0, 1], [0, 1]],
    "num_stages": 5, "num_warps": 8, "pid_type": "xyz", "reduction_loops": [256], "split_columns": True,
}


def test_rms_norm_fwd_of_the_illegal_memory_access_indexes_through_pointers():
    """The tuner's config built a descriptor in each of 65536 x 4096 programs (32 GiB of scratch, offsets
    wrapping at 2 GiB): an illegal memory access on an H200."""
    from kernels_src.rms_norm import rms_norm_fwd

    x, weight = torch.zeros(65536, 4096), torch.ones(4096)
    _, launched = launches_of(rms_norm_fwd, (x, weight, 1e-6, x.dtype), RMS_NORM_AUTOTUNE_FAILURE, run=False)
    assert [flag for _, constants in launched for flag in tma_flags(constants)] == [False]


def test_every_descriptor_is_behind_a_launcher_flag():
    """Each tl.make_tensor_descriptor sits under a constexpr flag, with a pointer access in its
    other branch."""
    x, y = torch.zeros(20, 70, dtype=torch.float16), torch.zeros(70, 18, dtype=torch.float16)
    source = matmul_addmm.bind((x, y)).to_triton_code(
        helion.Config(block_sizes=[16, 16, 16], indexing="tensor_descriptor"))
    lines = source.splitlines()
    flags = set()
    for i, line in enumerate(lines):
        if "tl.make_tensor_descriptor(" not in line:
            continue
        inline = re.search(r" if (_TMA_\w+) else tl\.load\(", line)
        guard = re.fullmatch(r"\s*if (_TMA_\w+):", lines[i - 1])
        assert inline or guard, line
        flags.add((inline or guard).group(1))
    assert len(flags) == 3


@pytest.mark.parametrize("case,expected", [
    ("aligned", True),
    ("block_under_16_bytes", False),
    ("load_block_under_128_bytes", False),
    ("misaligned_base", False),
    ("outer_stride_not_16_bytes", False),
])
def test_descriptor_flags_check_tma_requirements(case, expected):
    # fp32 [4, block_n] blocks: rows of 8 bytes; 64 bytes in all; 128 bytes
    block_n = {"block_under_16_bytes": 2, "load_block_under_128_bytes": 4}.get(case, 8)
    columns = 63 if case == "outer_stride_not_16_bytes" else 64
    x = torch.zeros(16, columns + 1)[:, 1:] if case == "misaligned_base" else torch.zeros(16, columns)
    config = helion.Config(block_sizes=[4, block_n], indexing="tensor_descriptor")
    _, ((_, constants),) = launches_of(add_2d, (x, x), config, run=False)
    assert tma_flags(constants)[:2] == [expected] * 2  # the loads of x (the store's `out` is a new tensor)


def test_small_descriptor_blocks_in_a_pipelined_loop_load_through_pointers(device):
    """A 64-byte block loaded in a loop of 3 stages faulted with CUDA's "misaligned address" when
    loaded through a descriptor (Triton 3.6 packs the stages' shared-memory blocks back to back, and
    a TMA destination must be 128-byte aligned): such a load takes its pointer branch."""
    x = randn(4, 300, device=device) - 3.0
    config = helion.Config(block_sizes=[2, 8], indexing=["tensor_descriptor", "pointer"], num_warps=1,
                           num_stages=5, range_num_stages=[3], range_peel_tails=[True])
    _, ((_, constants),) = launches_of(row_max_and_softmax_sum, (x,), config, run=False)
    assert tma_flags(constants) == [False, False]  # the loop's whole tiles and its peeled tail
    compare(row_max_and_softmax_sum.bind((x,)).compile_config(config)(x), torch.logsumexp(x.double(), dim=1))


def scratch_cases() -> dict:
    """Runs in a process without TRITON_INTERPRET: each case's per-program global scratch on sm_90
    against the launcher's assumption (128 bytes per tl.make_tensor_descriptor site)."""
    from build_tools.cross_compile import cross_compile

    x, y = torch.randn(256, 512, dtype=torch.float16), torch.randn(512, 256, dtype=torch.float16)
    cases = {
        "matmul": {"block_sizes": [64, 64, 64], "indexing": "tensor_descriptor", "num_stages": 4},
        "matmul_warp_specialized": {"block_sizes": [64, 64, 64], "indexing": "tensor_descriptor", "num_stages": 3,
                                    "range_warp_specializes": [True], "pid_type": "persistent_interleaved"},
    }
    results = {}
    for name, config in cases.items():
        source = matmul_addmm.bind((x, y)).to_triton_code(config)
        (compiled,) = cross_compile(matmul_addmm.bind((x, y)), (x, y), config)
        results[name] = {"sites": source.count("tl.make_tensor_descriptor("), "scratch": compiled.global_scratch_size}
    return results


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_descriptor_scratch_stays_within_the_launchers_margin():
    results = results_without_interpreter("tests.dsl.test_launch_limits", timeout=600)
    for name, result in results.items():
        assert result["sites"] == 3, name
        # _descriptor_scratch_fits keeps launches 8 times below Triton's 2 GiB of 32-bit offsets
        assert 128 * result["sites"] <= result["scratch"] <= 8 * 128 * result["sites"], (name, result)


if __name__ == "__main__":
    print(json.dumps(scratch_cases()))
