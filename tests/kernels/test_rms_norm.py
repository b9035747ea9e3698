"""RMSNorm kernels (with and without weight, forward and backward) against float64 references.

Tolerances are the op's own (kernels_src.rms_norm.tolerance): fp32 (1e-5, 1e-5), bf16 (1e-2, 1e-2),
fp16 (2e-3, 2e-3) as (rtol, atol) on O(1) outputs; backward fp32 (1e-4, 1e-4) for dX alone and
(1e-4, 2e-3) with dW (its error grows with M: rms_norm.tolerance_bwd). Each case runs under the default config,
random configs and both structures of the weighted kernels (whole rows; rows split into column
tiles a few chunks wide); long rows also run with a looped reduction (forward) and split columns.
"""
import pytest
import torch

from kernel_check import a_few_chunks, check_op, config_with, looped_reduction, run_config
from kernels_src import rms_norm

SHAPES = {
    "cpu": [(1, 1), (1, 7), (37, 300), (70, 64)],
    "cuda": [(1, 4096), (4097, 4096), (1000, 8192), (33, 16384)],
}
LONG_ROW_SHAPES = {"cpu": [(3, 5000), (1, 4099)], "cuda": [(64, 262144), (5, 300001)]}
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Rows of a forward program (the first registered block size) in the structure configs: 16 does not
# divide the CPU shapes' M (37, 70), so the last row tile is masked, and Triton's interpreter runs
# 16x fewer programs than with the default config's single rows.
ROW_TILE = 16
# Split columns with the column tile (the second registered block size) a few chunks wide; the forward
# also sets reduction_loops, since the DSL caps the block volume counting the untaken branch's row.
SPLIT_FWD = config_with("split columns", {("split_columns", None): True, ("block_sizes", 0): ROW_TILE,
                                          ("block_sizes", 1): a_few_chunks, ("reduction_loops", None): a_few_chunks})
SPLIT_BWD = config_with("split columns", {("split_columns", None): True, ("block_sizes", 1): a_few_chunks})
# Whole rows in ROW_TILE-row tiles; the forward's default config runs them in single rows (in the
# backward the first block size is the rows per step).
WHOLE_ROWS = config_with("whole rows", {("split_columns", None): False, ("block_sizes", 0): ROW_TILE})
# The forward's weight loaded before the row's reduction, with the whole row (ROW_TILE rows; at M=1
# single-row programs, as the tables' decode entries) and with a looped reduction.
WEIGHT_FIRST = config_with("weight first", {("split_columns", None): False, ("load_weight_first", None): True,
                                            ("block_sizes", 0): ROW_TILE})
WEIGHT_FIRST_LOOPED = config_with("weight first, looped reduction",
                                  {("split_columns", None): False, ("load_weight_first", None): True,
                                   ("reduction_loops", None): a_few_chunks})
# Contiguous row runs, 8 programs, balanced to the row: single rows and blocks of 4 rows (at M=37 the
# first 5 programs take 5 rows, a block and a 1-row block, the others 4; at M=70, 9 and 8 rows).
CONTIGUOUS_ROWS = [config_with(f"contiguous {rows}-row blocks", {("split_columns", None): False,
                                                                 ("interleave_rows", None): False,
                                                                 ("dweight_partials", None): 8,
                                                                 ("block_sizes", 0): rows})
                   for rows in (1, 4)]
# dweight summed in the kernel by the last programs to arrive (8 programs of 4-row steps: at M=37 and
# 70, 10 and 18 row blocks, the last one cut short by M; whole rows: 256-column finisher tiles, so 2
# finishers at N=300; split columns: one finisher per column tile).
FINISHED = [config_with(f"dweight finished in the kernel, {label}",
                        {("split_columns", None): split, ("finish_dweight", None): "last_programs",
                         ("dweight_partials", None): 8, ("block_sizes", 0): 4, ("block_sizes", 1): 256,
                         ("block_sizes", 2): 4})
            for label, split in (("whole rows", False), ("split columns", True))]
# dweight summed by the host's reduction and cast, and by the sum pass in several 2-row steps of
# 16-column programs (the default config's sum pass takes all partial rows of a short input at once;
# 8 programs of 4-row steps, as FINISHED).
SUMMED = [config_with("dweight summed by the host", {("finish_dweight", None): "host"}),
          *(config_with(f"dweight sum pass in 2-row steps, {label}",
                        {("split_columns", None): split, ("finish_dweight", None): "sum_pass",
                         ("dweight_partials", None): 8, ("block_sizes", 0): 4, ("block_sizes", 2): 2,
                         ("block_sizes", 3): 16})
            for label, split in (("whole rows", False), ("split columns", True)))]

# Whole rows loaded again after the row's mean (reload_rows), alone and with the in-kernel finish.
RELOADED = [config_with("rows reloaded", {("split_columns", None): False, ("reload_rows", None): True}),
            config_with("rows reloaded, dweight finished in the kernel",
                        {("split_columns", None): False, ("reload_rows", None): True, ("finish_dweight", None): "last_programs",
                         ("dweight_partials", None): 8, ("block_sizes", 0): 4, ("block_sizes", 1): 256})]


def _shape(m, n):
    return {"M": m, "N": n}


# Each shape is its own test (the lists have one length per device), so that parallel workers share
# the GPU run's compiles evenly.
CASES = range(len(SHAPES["cpu"]))
LONG_CASES = range(len(LONG_ROW_SHAPES["cpu"]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("eps", [1e-6, 0.1])
@pytest.mark.parametrize("case", CASES)
def test_forward(device, dtype, eps, case):
    m, n = SHAPES[device][case]
    x, weight, _, _ = rms_norm.make_fwd_inputs(_shape(m, n), dtype, device, seed=case)
    args = (x, weight, eps, dtype)
    check_op(rms_norm.rms_norm_fwd, args, rms_norm.reference_fwd(*args), rms_norm.tolerance(dtype),
             f"rms_norm_fwd {m}x{n} {dtype}", extra_configs=[SPLIT_FWD, WHOLE_ROWS, WEIGHT_FIRST],
             output_dtypes=(dtype, torch.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_forward_noweight(device, dtype, case):
    m, n = SHAPES[device][case]
    args = rms_norm.make_noweight_fwd_inputs(_shape(m, n), dtype, device, seed=100 + case)
    check_op(rms_norm.rms_norm_noweight_fwd, args, rms_norm.reference_noweight_fwd(*args),
             rms_norm.tolerance(dtype), f"rms_norm_noweight_fwd {m}x{n} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_backward(device, dtype, case):
    m, n = SHAPES[device][case]
    args = rms_norm.make_bwd_inputs(_shape(m, n), dtype, device, seed=200 + case)
    check_op(rms_norm.rms_norm_bwd, args, rms_norm.reference_bwd(*args), rms_norm.tolerance_bwd(dtype),
             f"rms_norm_bwd {m}x{n} {dtype}", extra_configs=[SPLIT_BWD, WHOLE_ROWS, *CONTIGUOUS_ROWS, *FINISHED, *SUMMED, *RELOADED],
             output_dtypes=(dtype, dtype))


# Half rows beside float32 (rms_norm.WEIGHTED_FWD_DTYPES / WEIGHTED_BWD_DTYPES): autocast's float32
# output of half rows, float32 (master) weights, float32 gradients. x is drawn in float32 and rounded
# to the half dtype, the float32 tensors drawn in float32; the output's dtype sets the tolerance.
MIXED_FWD = [(half, weight, out) for half in (torch.bfloat16, torch.float16)
             for weight, out in ((half, torch.float32), (torch.float32, half), (torch.float32, torch.float32))]
MIXED_BWD = [(half, grad, weight) for half in (torch.bfloat16, torch.float16)
             for grad, weight in ((torch.float32, half), (half, torch.float32), (torch.float32, torch.float32))]


@pytest.mark.parametrize("half, weight_dtype, out_dtype", MIXED_FWD, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_forward_of_half_rows_beside_float32(device, half, weight_dtype, out_dtype, case):
    m, n = SHAPES[device][case]
    x, weight, eps, _ = rms_norm.make_fwd_inputs(_shape(m, n), torch.float32, device, seed=700 + case)
    args = (x.to(half), weight.to(weight_dtype), eps, out_dtype)
    check_op(rms_norm.rms_norm_fwd, args, rms_norm.reference_fwd(*args), rms_norm.tolerance(out_dtype),
             f"rms_norm_fwd {m}x{n} {half} weight {weight_dtype} out {out_dtype}",
             extra_configs=[SPLIT_FWD, WHOLE_ROWS, WEIGHT_FIRST], output_dtypes=(out_dtype, torch.float32))


@pytest.mark.parametrize("half, grad_dtype, weight_dtype", MIXED_BWD, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_backward_of_half_rows_beside_float32(device, half, grad_dtype, weight_dtype, case):
    """dx in x's dtype, dweight in the weight's."""
    m, n = SHAPES[device][case]
    grad_out, x, weight, _ = rms_norm.make_bwd_inputs(_shape(m, n), torch.float32, device, seed=800 + case)
    x = x.to(half)
    args = (grad_out.to(grad_dtype), x, weight.to(weight_dtype), rms_norm._inv_rms_fp32(x, rms_norm.DEFAULT_EPS))
    check_op(rms_norm.rms_norm_bwd, args, rms_norm.reference_bwd(*args), rms_norm.tolerance_bwd(half),
             f"rms_norm_bwd {m}x{n} {half} grad {grad_dtype} weight {weight_dtype}",
             extra_configs=[SPLIT_BWD, WHOLE_ROWS, *FINISHED], output_dtypes=(half, weight_dtype))


@pytest.mark.parametrize("half", (torch.bfloat16, torch.float16), ids=str)
@pytest.mark.parametrize("case", CASES)
def test_noweight_of_half_rows_beside_float32(device, half, case):
    """The forward's float32 output of half rows and the backward's float32 gradient."""
    m, n = SHAPES[device][case]
    x, eps, _ = rms_norm.make_noweight_fwd_inputs(_shape(m, n), torch.float32, device, seed=900 + case)
    x = x.to(half)
    args = (x, eps, torch.float32)
    check_op(rms_norm.rms_norm_noweight_fwd, args, rms_norm.reference_noweight_fwd(*args),
             rms_norm.tolerance(torch.float32), f"rms_norm_noweight_fwd {m}x{n} {half} out float32",
             output_dtypes=(torch.float32, torch.float32))
    grad_out = torch.randn(x.shape, dtype=torch.float32, device=device)
    args = (grad_out, x, rms_norm._inv_rms_fp32(x, eps))
    check_op(rms_norm.rms_norm_noweight_bwd, args, rms_norm.reference_noweight_bwd(*args),
             rms_norm.tolerance_dx(half), f"rms_norm_noweight_bwd {m}x{n} {half} grad float32",
             output_dtypes=(half,))


# One program over every row (13 rows in 16-row steps): it stores dweight itself, whichever finish
# the config names and in both structures; rows of a few 256-column tiles when split.
LONE_PROGRAM = [config_with(f"one program, {finish}, {label}",
                            {("split_columns", None): split, ("finish_dweight", None): finish, ("block_sizes", 0): 16,
                             ("block_sizes", 1): 256})
                for finish in ("sum_pass", "host", "last_programs") for label, split in (("whole rows", False), ("split columns", True))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_backward_one_program_stores_dweight(device, dtype):
    """Where one program covers every row (a decode step's backward), it writes dweight in the
    weight's dtype and nothing sums partials; the same kernels at 37 rows take the partials."""
    for m in (13, 37):
        args = rms_norm.make_bwd_inputs(_shape(m, 700), dtype, device, seed=250 + m)
        check_op(rms_norm.rms_norm_bwd, args, rms_norm.reference_bwd(*args), rms_norm.tolerance_bwd(dtype),
                 f"rms_norm_bwd {m}x700 {dtype}", extra_configs=LONE_PROGRAM, output_dtypes=(dtype, dtype),
                 random_seeds=())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_backward_noweight(device, dtype, case):
    m, n = SHAPES[device][case]
    args = rms_norm.make_noweight_bwd_inputs(_shape(m, n), dtype, device, seed=300 + case)
    check_op(rms_norm.rms_norm_noweight_bwd, args, rms_norm.reference_noweight_bwd(*args),
             rms_norm.tolerance_dx(dtype), f"rms_norm_noweight_bwd {m}x{n} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", LONG_CASES)
def test_long_rows_forward(device, dtype, case):
    m, n = LONG_ROW_SHAPES[device][case]
    fwd_args = rms_norm.make_fwd_inputs(_shape(m, n), dtype, device, seed=400 + case)
    check_op(rms_norm.rms_norm_fwd, fwd_args, rms_norm.reference_fwd(*fwd_args), rms_norm.tolerance(dtype),
             f"rms_norm_fwd {m}x{n} {dtype}", extra_configs=[looped_reduction, SPLIT_FWD, WEIGHT_FIRST_LOOPED],
             random_seeds=())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", LONG_CASES)
def test_long_rows_backward(device, dtype, case):
    m, n = LONG_ROW_SHAPES[device][case]
    bwd_args = rms_norm.make_bwd_inputs(_shape(m, n), dtype, device, seed=500 + case)
    check_op(rms_norm.rms_norm_bwd, bwd_args, rms_norm.reference_bwd(*bwd_args), rms_norm.tolerance_bwd(dtype),
             f"rms_norm_bwd {m}x{n} {dtype}", extra_configs=[SPLIT_BWD], random_seeds=())


@pytest.mark.parametrize("split", [True, False], ids=["split_columns", "whole_rows"])
def test_backward_leaves_its_counters_zeroed(device, split):
    """With finish_dweight, the last programs to arrive sum dweight in the kernel and reset their counters:
    the launcher reuses the buffer without a fill, so a second call (other inputs) must be right too.
    32 programs of 2-row steps (35 row blocks), 256-column tiles: 3 finishers (whole rows) or 3 column
    tiles (split)."""
    rms_norm.rms_norm_bwd.reset()
    for seed in (600, 601):
        args = rms_norm.make_bwd_inputs(_shape(70, 700), torch.float32, device, seed=seed)
        bound = rms_norm.rms_norm_bwd.bind(args)
        _, config = config_with("32 programs", {("split_columns", None): split, ("finish_dweight", None): "last_programs",
                                                ("block_sizes", 0): 2, ("block_sizes", 1): 256,
                                                ("dweight_partials", None): 32})(bound)
        compiled = bound.compile_config(config)
        grad_x, grad_weight = run_config(bound, config, args)
        expected_x, expected_weight = rms_norm.reference_bwd(*args)
        rtol, atol = rms_norm.tolerance_bwd(torch.float32)
        torch.testing.assert_close(grad_x.double(), expected_x.to(grad_x.device), rtol=rtol, atol=atol)
        torch.testing.assert_close(grad_weight.double(), expected_weight.to(grad_x.device), rtol=rtol, atol=atol)
        counters = [buffer for buffer in compiled.__globals__["_COUNTERS"].values() if buffer.device == grad_x.device]
        assert len(counters) == 1 and int(counters[0].abs().sum()) == 0
