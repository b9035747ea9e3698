"""Matrix multiplies: 2-D `matmul`, batched 3-D `bmm`, and `linear` (x @ weight.T + bias, F.linear's layout).

Every kernel accumulates in fp32 over a device loop on K and rounds once when storing. Loads go
through the tensors' strides, so transposed views work as inputs: the runtime composes the
backward of linear/matmul from these kernels (dx = dy @ w, dw = dy.T @ x, via `matmul` on views)
and runs a bias-free linear as `matmul(x, weight.t())`.
fp32 inputs use the dot unit's default precision, which is TF32 on NVIDIA GPUs (10-bit mantissa
inputs, fp32 accumulation); their tolerance says so.
`bmm` runs one batch per program with 2-D tiles: a 3-D dot over a batch tile compiles without
wgmma on sm_90 and spills.
`matmul` has two structures, picked by the `split_k` tunable: one program per output tile over all
of K (split_k = 1), or K cut into split_k pieces, one program per (tile, piece), each storing an
fp32 partial tile; the last piece of a tile to arrive (its counter's previous value, from
`hl.signal`) sums the partials in piece order, stores the output and resets the counter, so the
launcher's reused counters (`helion.counters`) need no fill. On an H200 two pieces beat the unsplit
kernel at M = 16 and 64 (N = K = 4096), where the tables use them (notes/dsl_gaps_kernels.md, 6).
"""
from __future__ import annotations

import math

import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.opspec import OpSpec

from ._inputs import as_float64, element_size, randn, seeded_generator

MAX_SPLIT_K = 16


@helion.kernel(static_shapes=False)
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.size()
    n = b.size(1)
    out = a.new_empty((m, n))
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    block_k = hl.register_block_size(k)
    split_k = hl.register_tunable("split_k", helion.PowerOfTwoFragment(1, MAX_SPLIT_K, 1))
    split_m = m if split_k > 1 else 0
    k_chunk = helion.cdiv(helion.cdiv(k, split_k), block_k) * block_k
    tiles_n = helion.cdiv(n, block_n)
    partial = a.new_empty((split_k, split_m, n), dtype=torch.float32)
    arrivals = helion.counters(helion.cdiv(split_m, block_m) * tiles_n, a.device)
    for tile_m, tile_n in hl.tile([m - split_m, n], block_size=[block_m, block_n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k, block_size=block_k):
            acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        out[tile_m, tile_n] = acc.to(out.dtype)
    for tile_m, tile_n, tile_s in hl.tile([split_m, n, split_k], block_size=[block_m, block_n, 1]):
        k_begin = tile_s.begin * k_chunk
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k_begin, min(k_begin + k_chunk, k), block_size=block_k):
            acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        partial[tile_s.begin, tile_m, tile_n] = acc
        tile_id = tile_m.id * tiles_n + tile_n.id
        arrived = hl.signal(arrivals, [tile_id], op="atomic_add", sem="acq_rel")
        if arrived == split_k - 1:
            total = hl.zeros([tile_m, tile_n], dtype=torch.float32)
            for piece in hl.grid(split_k):
                total = total + partial[piece, tile_m, tile_n]
            out[tile_m, tile_n] = total.to(out.dtype)
            hl.signal(arrivals, [tile_id], signal=0, skip_sync=True)
    return out


@helion.kernel(static_shapes=False)
def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    batch, m, k = a.size()
    n = b.size(2)
    out = a.new_empty((batch, m, n))
    for tile_b, tile_m, tile_n in hl.tile([batch, m, n], block_size=[1, None, None]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, a[tile_b.begin, tile_m, tile_k], b[tile_b.begin, tile_k, tile_n])
        out[tile_b.begin, tile_m, tile_n] = acc.to(out.dtype)
    return out


@helion.kernel(static_shapes=False)
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = weight.size(0)
    out = x.new_empty((m, n))
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], weight[tile_n, tile_k].T)
        out[tile_m, tile_n] = (acc + bias[tile_n].to(torch.float32)[None, :]).to(out.dtype)
    return out


# ---- inputs: the right-hand operand is scaled by 1/sqrt(K) so outputs are O(1) at every K ------

def make_matmul_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = randn([m, k], dtype, device, generator)
    b = randn([k, n], dtype, device, generator, scale=1.0 / math.sqrt(k))
    return a, b


def make_bmm_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    batch, m, n, k = shape["B"], shape["M"], shape["N"], shape["K"]
    a = randn([batch, m, k], dtype, device, generator)
    b = randn([batch, k, n], dtype, device, generator, scale=1.0 / math.sqrt(k))
    return a, b


def make_linear_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    m, n, k = shape["M"], shape["N"], shape["K"]
    x = randn([m, k], dtype, device, generator)
    weight = randn([n, k], dtype, device, generator, scale=1.0 / math.sqrt(k))
    bias = randn([n], dtype, device, generator)
    return x, weight, bias


# ---- float64 references and eager peers ------------------------------------------------------

def reference_matmul(a, b):
    return torch.mm(as_float64(a), as_float64(b))


def reference_bmm(a, b):
    return torch.bmm(as_float64(a), as_float64(b))


def reference_linear(x, weight, bias):
    return torch.nn.functional.linear(as_float64(x), as_float64(weight), as_float64(bias))


def baseline_matmul(a, b):
    return torch.mm(a, b)


def baseline_bmm(a, b):
    return torch.bmm(a, b)


def baseline_linear(x, weight, bias):
    return torch.nn.functional.linear(x, weight, bias)


# ---- tolerances and costs ---------------------------------------------------------------------

def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for O(1) outputs. fp32 is computed with TF32 dots on NVIDIA GPUs: its error is
    about 1e-3 relative to the operands' scale, hence 1e-3 rtol with a 5e-3 atol (exact fp32 under
    the CPU interpreter). bf16/fp16 differ mostly by the final rounding of the output."""
    return {torch.float32: (1e-3, 5e-3), torch.bfloat16: (1e-2, 1e-2), torch.float16: (2e-3, 2e-3)}[dtype]


def cost_matmul(shape, dtype):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return 2.0 * m * n * k, float((m * k + k * n + m * n) * element_size(dtype))


def cost_bmm(shape, dtype):
    flops, moved = cost_matmul(shape, dtype)
    return shape["B"] * flops, shape["B"] * moved


def cost_linear(shape, dtype):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return 2.0 * m * n * k + m * n, float((m * k + k * n + m * n + n) * element_size(dtype))


MATMUL_SHAPES = [
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 8192, "N": 8192, "K": 8192},
    {"M": 4096, "N": 11008, "K": 4096},
    {"M": 4096, "N": 4096, "K": 11008},
    {"M": 16, "N": 4096, "K": 4096},
    {"M": 64, "N": 4096, "K": 4096},
    {"M": 128, "N": 4096, "K": 4096},
    {"M": 128, "N": 11008, "K": 4096},
]
BMM_SHAPES = [
    {"B": 32, "M": 1024, "N": 1024, "K": 128},
    {"B": 16, "M": 2048, "N": 2048, "K": 2048},
    {"B": 8, "M": 4096, "N": 4096, "K": 64},
    {"B": 128, "M": 16, "N": 128, "K": 4096},
]
LINEAR_SHAPES = [
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 4096, "N": 11008, "K": 4096},
    {"M": 4096, "N": 4096, "K": 11008},
    {"M": 8192, "N": 14336, "K": 4096},
    {"M": 16, "N": 4096, "K": 4096},
    {"M": 128, "N": 4096, "K": 14336},
]
# Suites stay small (the library tunes in about 30 GPU minutes): bf16 and fp16 (tensor-core dtypes);
# fp32 (TF32) runs on the dispatcher's fallback configs. bmm tunes bf16 only.
DTYPES = (torch.bfloat16, torch.float16)
BMM_DTYPES = (torch.bfloat16,)

OPS = [
    OpSpec(name="matmul", kernel=matmul, make_inputs=make_matmul_inputs, reference=reference_matmul,
           shapes=MATMUL_SHAPES, dtypes=DTYPES, tolerance=tolerance, cost=cost_matmul, baseline=baseline_matmul),
    OpSpec(name="bmm", kernel=bmm, make_inputs=make_bmm_inputs, reference=reference_bmm,
           shapes=BMM_SHAPES, dtypes=BMM_DTYPES, tolerance=tolerance, cost=cost_bmm, baseline=baseline_bmm),
    OpSpec(name="linear", kernel=linear, make_inputs=make_linear_inputs, reference=reference_linear,
           shapes=LINEAR_SHAPES, dtypes=DTYPES, tolerance=tolerance, cost=cost_linear, baseline=baseline_linear),
]
