"""Softmax forward and backward along the last dim of a 2-D [M, N] tensor.

forward:  y = exp(x - max(x)) / sum(exp(x - max(x)))     (fp32 math, y allocated in `out_dtype`)
backward: dx = y * (dy - sum(dy * y))                     (fp32 math, dx allocated in `grad_in_dtype`)
Each kernel has three structures, picked by two tunables:
- `split_rows` (default False): rows cut into pieces of `piece_tiles` column tiles of `block_n`
  columns, one program a piece, for long rows (131072, 262144, ...) that no program can hold. A
  program walks its piece once for the piece's (max, sum of exp) forward or dot(dy, y) backward,
  publishes it, waits for the row's other pieces (hl.signal / hl.wait on a per-row counter), then
  walks its piece again to write it: that second read comes from L2 (the piece was read
  microseconds before), so HBM sees every element read once and written once, and no piece is held
  in registers across the wait (more programs stay resident to keep loads in flight). The second
  walk loads its first tile before it waits, so that load's latency overlaps the wait (only that
  tile, in the input dtype, is live across it: 1.02-1.04x on an H100). Programs take
  their (row, piece) from an atomic ticket, so the pieces of a row are started together whatever
  order the GPU starts programs in; a row may have at most MAX_ROW_PIECES pieces (all resident at
  once on any GPU with 32+ SMs), longer rows (for the given piece) run the structure below.
- otherwise `online_softmax` forward / `two_pass_rows` backward, each program owning a tile of rows:
  - True (the default): column tiles. A first device loop carries the row's running max and
    rescaled sum (forward) or dot(dy, y) (backward); a second loop writes the output; the row is
    read twice. The first pass walks the tiles last to first, so that the second pass starts on the
    tiles read most recently (the likeliest to be in L2); the second pass's loads are evict_first.
  - False: whole rows held in registers (`:`), one read; rows up to ~32768 elements. In the
    backward, the tunable `reload_rows` loads y and dy again (from L1/L2) after their dot instead
    of holding them in fp32 across it: at 32 warps a thread has 64 registers, which a 32768-wide
    row's fp32 y and dy fill alone (10 spilled registers at 32000 columns).
Columns past N: the first pass masks its reversed tiles explicitly (its loop runs over a range
padded to whole tiles); elsewhere the DSL masks loads and reductions by tile bounds.
"""
from __future__ import annotations

import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.opspec import OpSpec

from ._inputs import as_float64, element_size, randn, seeded_generator

MIN_COLUMN_TILE = 256  # narrower column tiles only add loop iterations
MAX_ROW_PIECES = 64  # programs that wait for each other: 64 are resident at once on any 32-SM GPU
PIECE_TILES = (1, 2, 4)  # column tiles per piece of a split row


@helion.kernel(static_shapes=False)
def softmax_fwd(x: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    m, n = x.size()
    out = x.new_empty((m, n), dtype=out_dtype)
    online = hl.register_tunable("online_softmax", helion.EnumFragment((True, False)))
    split_rows = hl.register_tunable("split_rows", helion.EnumFragment((False, True)))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment(PIECE_TILES))
    block_n = hl.register_block_size(MIN_COLUMN_TILE, n)
    padded = helion.cdiv(n, block_n) * block_n
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    split_m = m if split_rows and pieces <= MAX_ROW_PIECES else 0
    piece_max = x.new_empty((split_m, pieces), dtype=torch.float32)
    piece_sum = x.new_empty((split_m, pieces), dtype=torch.float32)
    sync = x.new_zeros(split_m + 1, dtype=torch.int32)  # arrivals per row, then the ticket counter
    for tile_m in hl.tile(m - split_m):
        if online:
            row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
            row_sum = hl.zeros([tile_m], dtype=torch.float32)
            for tile_n in hl.tile(padded, block_size=block_n):
                columns = tile_n.index + (padded - block_n - 2 * tile_n.begin)
                inside = columns < n
                loaded = hl.load(x, [tile_m, columns], extra_mask=inside[None, :]).to(torch.float32)
                values = torch.where(inside[None, :], loaded, float("-inf"))
                new_max = torch.maximum(row_max, torch.amax(values, dim=1))
                tile_sum = torch.sum(torch.exp(values - new_max[:, None]), dim=1)
                row_sum = row_sum * torch.exp(row_max - new_max) + tile_sum
                row_max = new_max
            inv_sum = 1.0 / row_sum
            for tile_n in hl.tile(n, block_size=block_n):
                chunk_values = hl.load(x, [tile_m, tile_n], eviction_policy="evict_first").to(torch.float32)
                out[tile_m, tile_n] = (torch.exp(chunk_values - row_max[:, None]) * inv_sum[:, None]).to(out.dtype)
        else:
            values = x[tile_m, :].to(torch.float32)
            row_max = torch.amax(values, dim=1, keepdim=True)
            exp_values = torch.exp(values - row_max)
            row_sum = torch.sum(exp_values, dim=1, keepdim=True)
            out[tile_m, :] = (exp_values * (1.0 / row_sum)).to(out.dtype)
    for program in hl.grid(split_m * pieces):
        ticket = hl.atomic_add(sync, [split_m], 1)
        row = ticket // pieces
        piece = ticket % pieces
        begin = piece * piece_len
        end = min(n, begin + piece_len)
        local_max = hl.full([], float("-inf"), dtype=torch.float32)
        local_sum = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            values = x[row, tile_n].to(torch.float32)
            new_max = torch.maximum(local_max, torch.amax(values, dim=0))
            local_sum = local_sum * torch.exp(local_max - new_max) + torch.sum(torch.exp(values - new_max), dim=0)
            local_max = new_max
        piece_max[row, piece] = local_max
        piece_sum[row, piece] = local_sum
        hl.signal(sync, [row], op="atomic_add")
        row_max = hl.zeros([], dtype=torch.float32)
        inv_sum = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            loaded = hl.load(x, [row, tile_n], eviction_policy="evict_first")
            if tile_n.begin == begin:  # the first tile's load is in flight during the wait
                hl.wait(sync, [row], signal=pieces)
                maxes = piece_max[row, :]
                row_max = torch.amax(maxes, dim=0)
                inv_sum = 1.0 / torch.sum(piece_sum[row, :] * torch.exp(maxes - row_max), dim=0)
            out[row, tile_n] = (torch.exp(loaded.to(torch.float32) - row_max) * inv_sum).to(out.dtype)
    return out


@helion.kernel(static_shapes=False)
def softmax_bwd(grad_out: torch.Tensor, out: torch.Tensor, grad_in_dtype: torch.dtype) -> torch.Tensor:
    m, n = out.size()
    grad_in = out.new_empty((m, n), dtype=grad_in_dtype)
    two_pass = hl.register_tunable("two_pass_rows", helion.EnumFragment((True, False)))
    reload = hl.register_tunable("reload_rows", helion.EnumFragment((False, True)))
    split_rows = hl.register_tunable("split_rows", helion.EnumFragment((False, True)))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment(PIECE_TILES))
    block_n = hl.register_block_size(MIN_COLUMN_TILE, n)
    padded = helion.cdiv(n, block_n) * block_n
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    split_m = m if split_rows and pieces <= MAX_ROW_PIECES else 0
    piece_dot = out.new_empty((split_m, pieces), dtype=torch.float32)
    sync = out.new_zeros(split_m + 1, dtype=torch.int32)  # arrivals per row, then the ticket counter
    for tile_m in hl.tile(m - split_m):
        if two_pass:
            row_dot = hl.zeros([tile_m], dtype=torch.float32)
            for tile_n in hl.tile(padded, block_size=block_n):
                columns = tile_n.index + (padded - block_n - 2 * tile_n.begin)
                inside = columns[None, :] < n
                y_part = hl.load(out, [tile_m, columns], extra_mask=inside).to(torch.float32)
                dy_part = hl.load(grad_out, [tile_m, columns], extra_mask=inside).to(torch.float32)
                row_dot = row_dot + torch.sum(dy_part * y_part, dim=1)
            for tile_n in hl.tile(n, block_size=block_n):
                y_part = hl.load(out, [tile_m, tile_n], eviction_policy="evict_first").to(torch.float32)
                dy_part = hl.load(grad_out, [tile_m, tile_n], eviction_policy="evict_first").to(torch.float32)
                grad_in[tile_m, tile_n] = (y_part * (dy_part - row_dot[:, None])).to(grad_in.dtype)
        else:
            y = out[tile_m, :].to(torch.float32)
            dy = grad_out[tile_m, :].to(torch.float32)
            row_dot = torch.sum(dy * y, dim=1, keepdim=True)
            if reload:  # load the rows again (from L1/L2) rather than hold them across the sum
                y = hl.load(out, [tile_m, slice(None)], eviction_policy="evict_first").to(torch.float32)
                dy = hl.load(grad_out, [tile_m, slice(None)], eviction_policy="evict_first").to(torch.float32)
            grad_in[tile_m, :] = (y * (dy - row_dot)).to(grad_in.dtype)
    for program in hl.grid(split_m * pieces):
        ticket = hl.atomic_add(sync, [split_m], 1)
        row = ticket // pieces
        piece = ticket % pieces
        begin = piece * piece_len
        end = min(n, begin + piece_len)
        local_dot = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            y = out[row, tile_n].to(torch.float32)
            dy = grad_out[row, tile_n].to(torch.float32)
            local_dot = local_dot + torch.sum(dy * y, dim=0)
        piece_dot[row, piece] = local_dot
        hl.signal(sync, [row], op="atomic_add")
        row_dot = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            y = hl.load(out, [row, tile_n], eviction_policy="evict_first")
            dy = hl.load(grad_out, [row, tile_n], eviction_policy="evict_first")
            if tile_n.begin == begin:  # the first tile's loads are in flight during the wait
                hl.wait(sync, [row], signal=pieces)
                row_dot = torch.sum(piece_dot[row, :], dim=0)
            grad_in[row, tile_n] = (y.to(torch.float32) * (dy.to(torch.float32) - row_dot)).to(grad_in.dtype)
    return grad_in


# ---- inputs ---------------------------------------------------------------------------------

def make_fwd_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    return randn([shape["M"], shape["N"]], dtype, device, generator, scale=2.0), dtype


def make_bwd_inputs(shape, dtype, device, seed):
    generator = seeded_generator(device, seed)
    logits = randn([shape["M"], shape["N"]], torch.float32, device, generator, scale=2.0)
    out = torch.softmax(logits, dim=-1).to(dtype)
    grad_out = randn([shape["M"], shape["N"]], dtype, device, generator)
    return grad_out, out, dtype


# ---- float64 references and eager peers ------------------------------------------------------

def reference_fwd(x, out_dtype):
    return torch.softmax(as_float64(x), dim=-1)


def reference_bwd(grad_out, out, grad_in_dtype):
    grad_out64, out64 = as_float64((grad_out, out))
    return out64 * (grad_out64 - (grad_out64 * out64).sum(-1, keepdim=True))


def baseline_fwd(x, out_dtype):
    return torch.softmax(x, dim=-1, dtype=torch.float32).to(out_dtype)


def baseline_bwd(grad_out, out, grad_in_dtype):
    return torch._softmax_backward_data(grad_out, out, -1, out.dtype).to(grad_in_dtype)


# ---- tolerances and costs ---------------------------------------------------------------------

def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol). Outputs are as small as 1/N (4e-6 at N=262144), so atol stays far below that:
    the comparison is effectively relative. fp16 keeps a 1e-7 atol for its subnormal range."""
    return {torch.float32: (1e-5, 1e-9), torch.bfloat16: (1e-2, 1e-8), torch.float16: (2e-3, 1e-7)}[dtype]


def tolerance_bwd(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for dx = y * (dy - sum(dy * y)): the difference cancels, so elements far smaller
    than their terms carry the terms' rounding (measured on an H200: 1.9e-9 abs, 4.6e-5 rel)."""
    return {torch.float32: (1e-4, 1e-8), torch.bfloat16: (1e-2, 1e-7), torch.float16: (2e-3, 1e-6)}[dtype]


def cost_fwd(shape, dtype):
    m, n = shape["M"], shape["N"]
    return 5.0 * m * n, float(2 * m * n * element_size(dtype))


def cost_bwd(shape, dtype):
    m, n = shape["M"], shape["N"]
    return 4.0 * m * n, float(3 * m * n * element_size(dtype))


# Attention-probability rows, vocabulary rows (decode and prefill) and the long-row cases.
# Suites stay small (the library tunes in about 30 GPU minutes): bf16 and fp32 only.
SHAPES = [
    {"M": 16384, "N": 1024},
    {"M": 16384, "N": 2048},
    {"M": 16384, "N": 4096},
    {"M": 16384, "N": 8192},
    {"M": 16384, "N": 16384},
    {"M": 1, "N": 32000},
    {"M": 2048, "N": 32000},
    {"M": 4096, "N": 16384},
    {"M": 4096, "N": 131072},
    {"M": 256, "N": 262144},
]
DTYPES = (torch.bfloat16, torch.float32)
# The row length decides a config's structure (persistent or looped rows), so it weighs 4x the row
# count when the dispatcher looks for the nearest tuned shape.
ROW_KEY_WEIGHTS = {"N": 4.0}
ROW_REDUCTION_KEYS = ("N",)  # the row length: the size a static_reduction_sizes variant compiles in

# softmax(x, dtype=torch.float32) on half rows (autocast's softmax on CUDA) reads the half rows and
# writes float32 probabilities in one kernel, and its backward reads float32 y and dy and writes the
# half gradient: each tuned config is also generated for those outputs.
HALF = (torch.bfloat16, torch.float16)
FLOAT32_OUTPUT = {half: ({"out_dtype": torch.float32},) for half in HALF}
HALF_GRADIENTS = {torch.float32: tuple({"grad_in_dtype": half} for half in HALF)}

OPS = [
    OpSpec(key_weights=ROW_KEY_WEIGHTS, reduction_keys=ROW_REDUCTION_KEYS, name="softmax_fwd", kernel=softmax_fwd, make_inputs=make_fwd_inputs, reference=reference_fwd,
           shapes=SHAPES, dtypes=DTYPES, tolerance=tolerance, cost=cost_fwd, baseline=baseline_fwd,
           dtype_variants=FLOAT32_OUTPUT),
    OpSpec(key_weights=ROW_KEY_WEIGHTS, reduction_keys=ROW_REDUCTION_KEYS, name="softmax_bwd", kernel=softmax_bwd, make_inputs=make_bwd_inputs, reference=reference_bwd,
           shapes=SHAPES, dtypes=DTYPES, tolerance=tolerance_bwd, cost=cost_bwd, baseline=baseline_bwd,
           dtype_variants=HALF_GRADIENTS),
]
