"""Softmax forward/backward kernels against float64 references, including other output dtypes.

Tolerances are the op's own for the output dtype (kernels_src.softmax.tolerance): fp32 (1e-5, 1e-9),
bf16 (1e-2, 1e-8), fp16 (2e-3, 1e-7) as (rtol, atol) (backward: kernels_src.softmax.tolerance_bwd) -- effectively relative, since outputs are
as small as 1/N. Each case runs under the default and random configs and under the three structures of
each kernel (whole rows, in the backward also loaded again after their dot; column tiles a few chunks wide; rows split across programs that exchange
partial results), long rows under the column-tile and split-row structures (pieces of one and of two
column tiles).
"""
import pytest
import torch

from kernel_check import a_few_chunks, check_op, config_with
from kernels_src import softmax

SHAPES = {
    "cpu": [(1, 1), (1, 7), (37, 300), (70, 64)],
    "cuda": [(1, 32000), (4097, 4096), (1000, 8192), (7, 50257)],
}
LONG_ROW_SHAPES = {"cpu": [(3, 5000), (1, 4099), (2, 3001)], "cuda": [(64, 131072), (8, 262144), (3, 300001)]}
# Rows of a program (the row tile's block size) in the column-tile and whole-row configs: 16 does not
# divide the CPU shapes' M (37, 70; long rows: 3, held in a 4-row tile), so the last row tile is
# masked, and Triton's interpreter runs 16x fewer programs than with the default config's single rows.
ROW_TILE = 16
# The column-tile structures with their column block (the first registered block size) a few chunks wide.
ONLINE = config_with("online softmax", {("online_softmax", None): True, ("block_sizes", 0): a_few_chunks,
                                        ("block_sizes", 1): ROW_TILE})
TWO_PASS = config_with("two passes", {("two_pass_rows", None): True, ("block_sizes", 0): a_few_chunks,
                                      ("block_sizes", 1): ROW_TILE})
WHOLE_ROWS_FWD = config_with("whole rows", {("online_softmax", None): False, ("block_sizes", 1): ROW_TILE})
WHOLE_ROWS_BWD = config_with("whole rows", {("two_pass_rows", None): False, ("block_sizes", 1): ROW_TILE})
RELOADED_ROWS_BWD = config_with("whole rows reloaded", {("two_pass_rows", None): False, ("reload_rows", None): True,
                                                        ("block_sizes", 1): ROW_TILE})
# Rows split across programs that wait for each other: pieces of one tile a few chunks wide, pieces of
# two such tiles, and pieces of one tile as wide as offered (long GPU rows: 8 and 16 pieces; at 300001
# columns the few-chunk pieces number 74 and fall back to column tiles).
SPLIT_ROWS = config_with("split rows", {("split_rows", None): True, ("piece_tiles", None): 1, ("block_sizes", 0): a_few_chunks})
SPLIT_ROWS_TWO_TILES = config_with("split rows, two-tile pieces",
                                   {("split_rows", None): True, ("piece_tiles", None): 2, ("block_sizes", 0): a_few_chunks})
SPLIT_ROWS_WIDE = config_with("split rows, widest pieces",
                              {("split_rows", None): True, ("piece_tiles", None): 1, ("block_sizes", 0): lambda knob: max(knob.choices)})
DTYPE_PAIRS = [  # (input dtype, output dtype)
    (torch.float32, torch.float32),
    (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.float16),
    (torch.bfloat16, torch.float32),
    (torch.float32, torch.bfloat16),
]


def _shape(m, n):
    return {"M": m, "N": n}


# Each shape is its own test (the lists have one length per device), so that parallel workers share
# the GPU run's compiles evenly.
CASES = range(len(SHAPES["cpu"]))
LONG_CASES = range(len(LONG_ROW_SHAPES["cpu"]))


@pytest.mark.parametrize("in_dtype,out_dtype", DTYPE_PAIRS, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_forward(device, in_dtype, out_dtype, case):
    m, n = SHAPES[device][case]
    x, _ = softmax.make_fwd_inputs(_shape(m, n), in_dtype, device, seed=case)
    args = (x, out_dtype)
    check_op(softmax.softmax_fwd, args, softmax.reference_fwd(*args), softmax.tolerance(out_dtype),
             f"softmax_fwd {m}x{n} {in_dtype}->{out_dtype}", extra_configs=[ONLINE, WHOLE_ROWS_FWD, SPLIT_ROWS],
             output_dtypes=(out_dtype,))


@pytest.mark.parametrize("in_dtype,out_dtype", DTYPE_PAIRS, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_backward(device, in_dtype, out_dtype, case):
    m, n = SHAPES[device][case]
    grad_out, out, _ = softmax.make_bwd_inputs(_shape(m, n), in_dtype, device, seed=100 + case)
    args = (grad_out, out, out_dtype)
    check_op(softmax.softmax_bwd, args, softmax.reference_bwd(*args), softmax.tolerance_bwd(out_dtype),
             f"softmax_bwd {m}x{n} {in_dtype}->{out_dtype}", extra_configs=[TWO_PASS, WHOLE_ROWS_BWD, RELOADED_ROWS_BWD, SPLIT_ROWS],
             output_dtypes=(out_dtype,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", LONG_CASES)
def test_long_rows_forward(device, dtype, case):
    m, n = LONG_ROW_SHAPES[device][case]
    fwd_args = softmax.make_fwd_inputs(_shape(m, n), dtype, device, seed=200 + case)
    check_op(softmax.softmax_fwd, fwd_args, softmax.reference_fwd(*fwd_args), softmax.tolerance(dtype),
             f"softmax_fwd {m}x{n} {dtype}", extra_configs=[ONLINE, SPLIT_ROWS, SPLIT_ROWS_TWO_TILES, SPLIT_ROWS_WIDE], random_seeds=())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", LONG_CASES)
def test_long_rows_backward(device, dtype, case):
    m, n = LONG_ROW_SHAPES[device][case]
    bwd_args = softmax.make_bwd_inputs(_shape(m, n), dtype, device, seed=300 + case)
    check_op(softmax.softmax_bwd, bwd_args, softmax.reference_bwd(*bwd_args), softmax.tolerance_bwd(dtype),
             f"softmax_bwd {m}x{n} {dtype}", extra_configs=[TWO_PASS, SPLIT_ROWS, SPLIT_ROWS_TWO_TILES, SPLIT_ROWS_WIDE], random_seeds=())


def test_large_logits_do_not_overflow(device):
    x, _ = softmax.make_fwd_inputs(_shape(5, 300), torch.float32, device, seed=400)
    args = (x * 1000.0, torch.float32)
    check_op(softmax.softmax_fwd, args, softmax.reference_fwd(*args), softmax.tolerance(torch.float32),
             "softmax_fwd large logits", extra_configs=[ONLINE, WHOLE_ROWS_FWD, SPLIT_ROWS])
