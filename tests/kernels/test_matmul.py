"""matmul / bmm / linear kernels against float64 references, including transposed (strided) inputs.

Tolerances are the op's own (kernels_src.matmul.tolerance) on O(1) outputs: fp32 (1e-3, 5e-3)
because GPUs run fp32 dots in TF32 (the CPU interpreter is exact fp32), bf16 (1e-2, 1e-2),
fp16 (2e-3, 2e-3). Each case runs under the default config and random configs; matmul also under
split-K configs (2 pieces, and 16: more pieces than K has blocks at the CPU sizes, so some are empty).
bf16 cases run only on GPUs: Triton's interpreter has no bf16 tl.dot.
"""
import pytest
import torch

from kernel_check import check_op, config_with, run_config
from kernels_src import matmul

MNK = {  # awkward sizes: 1, primes, K not a multiple of any block
    "cpu": [(1, 1, 1), (1, 37, 70), (16, 9, 33), (67, 45, 131)],
    "cuda": [(1, 4096, 4096), (77, 11008, 4096), (128, 4096, 11008), (1000, 1001, 999), (4096, 4096, 4096)],
}
BMM = {"cpu": [(1, 1, 1, 1), (3, 17, 9, 40)], "cuda": [(32, 1024, 1024, 128), (7, 333, 129, 257)]}
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


SPLIT_K = [config_with(f"split_k={pieces}", {("split_k", None): pieces}) for pieces in (2, matmul.MAX_SPLIT_K)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_matmul(device, dtype):
    for case, (m, n, k) in enumerate(MNK[device]):
        args = matmul.make_matmul_inputs({"M": m, "N": n, "K": k}, dtype, device, seed=case)
        check_op(matmul.matmul, args, matmul.reference_matmul(*args), matmul.tolerance(dtype),
                 f"matmul {m}x{n}x{k} {dtype}", output_dtypes=(dtype,), extra_configs=SPLIT_K)


def test_split_k_leaves_its_counters_zeroed(device):
    """The last program to finish an output tile resets its arrival counter: the launcher reuses
    the buffer without a fill, so a second call (other inputs, same sizes) must be right too."""
    matmul.matmul.reset()
    for seed in (400, 401):
        args = matmul.make_matmul_inputs({"M": 37, "N": 70, "K": 300}, torch.float32, device, seed=seed)
        bound = matmul.matmul.bind(args)
        label, config = config_with("split_k=4", {("split_k", None): 4, ("block_sizes", None): 16})(bound)
        compiled = bound.compile_config(config)
        out = run_config(bound, config, args)
        torch.testing.assert_close(out.double(), matmul.reference_matmul(*args).to(out.device),
                                   rtol=1e-3, atol=5e-3)
        counters = [buffer for buffer in compiled.__globals__["_COUNTERS"].values() if buffer.device == out.device]
        assert len(counters) == 1 and counters[0].numel() >= 3 * 5
        assert int(counters[0].abs().sum()) == 0


def test_drawn_tiles_and_split_k_counters_share_no_entry(device):
    """A split-K launch whose programs also draw their tiles (pid_type "persistent_dynamic") takes
    two counter buffers, the host code's (lane 0) and the tile scheduler's (lane 1); both must be
    zeroed when it ends, so a second call is right too."""
    matmul.matmul.reset()
    for seed in (402, 403):
        args = matmul.make_matmul_inputs({"M": 37, "N": 70, "K": 300}, torch.float32, device, seed=seed)
        bound = matmul.matmul.bind(args)
        _, config = config_with("split_k=4, drawn tiles", {("split_k", None): 4, ("block_sizes", None): 16,
                                                            ("pid_type", None): "persistent_dynamic",
                                                            ("tile_reversals", None): True})(bound)
        assert config["pid_type"] == "persistent_dynamic"
        compiled = bound.compile_config(config)
        out = run_config(bound, config, args)
        torch.testing.assert_close(out.double(), matmul.reference_matmul(*args).to(out.device),
                                   rtol=1e-3, atol=5e-3)
        lanes = {key[-1]: buffer for key, buffer in compiled.__globals__["_COUNTERS"].items()
                 if buffer.device == out.device}
        assert sorted(lanes) == [0, 1]
        assert all(int(buffer.abs().sum()) == 0 for buffer in lanes.values())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_matmul_transposed_views(device, dtype):
    """The runtime's backward passes transposed views (dy @ w, dy.T @ x): strides must be honoured."""
    for case, (m, n, k) in enumerate(MNK[device][1:]):
        a, b = matmul.make_matmul_inputs({"M": k, "N": m, "K": n}, dtype, device, seed=50 + case)
        args = (b.t(), a.t())  # [m, n] @ [n, k], both non-contiguous
        check_op(matmul.matmul, args, matmul.reference_matmul(*args), matmul.tolerance(dtype),
                 f"matmul transposed {m}x{k}x{n} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bmm(device, dtype):
    for case, (batch, m, n, k) in enumerate(BMM[device]):
        args = matmul.make_bmm_inputs({"B": batch, "M": m, "N": n, "K": k}, dtype, device, seed=100 + case)
        check_op(matmul.bmm, args, matmul.reference_bmm(*args), matmul.tolerance(dtype),
                 f"bmm {batch}x{m}x{n}x{k} {dtype}", output_dtypes=(dtype,))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linear(device, dtype):
    for case, (m, n, k) in enumerate(MNK[device]):
        args = matmul.make_linear_inputs({"M": m, "N": n, "K": k}, dtype, device, seed=200 + case)
        check_op(matmul.linear, args, matmul.reference_linear(*args), matmul.tolerance(dtype),
                 f"linear {m}x{n}x{k} {dtype}", output_dtypes=(dtype,))


def test_linear_bias_is_added(device):
    """A bias of large magnitude makes a dropped or misplaced epilogue fail regardless of tolerance."""
    x, weight, bias = matmul.make_linear_inputs({"M": 5, "N": 19, "K": 24}, torch.float32, device, seed=300)
    args = (x, weight, bias * 100.0)
    check_op(matmul.linear, args, matmul.reference_linear(*args), matmul.tolerance(torch.float32), "linear bias")
