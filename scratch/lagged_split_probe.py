"""Probe: split-row softmax (forward and backward) where a program's second walk is not of its own
piece but of the piece `lag_rows` rows behind it in ticket order. Program `t` walks piece `t` once
(partial max/sum, or dot), publishes it, then waits for the row of piece `t - lag` (all of whose
pieces took lower tickets, so their programs have started and published, or will without waiting:
no residency bound) and writes that piece, re-reading it from L2. The library's structure waits
for its own row's pieces, the slowest of which started with it. The grid has `lag` more programs
than pieces: the first `lag` only publish, the last `lag` only write.
Timed (benchmarks.timing.Timer: CUDA events, L2 write-flushed, alternating rounds) against the
library's softmax in one process. An experiment, not library code.
Run: python3 scratch/lagged_split_probe.py fwd|bwd DTYPE M N [M N ...]; PROBE_CONFIGS = JSON list."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import build_tools.dsl as helion
import build_tools.dsl.language as hl
import helion_kernels as hk
from helion_kernels._ops.softmax import _bwd_impl, _fwd_impl
from benchmarks.timing import Timer


@helion.kernel(static_shapes=False)
def lagged_softmax_fwd(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    lag_rows = hl.register_tunable("lag_rows", helion.EnumFragment((1, 2, 4, 8, 16)))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment((1, 2, 4)))
    block_n = hl.register_block_size(256, n)
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    total = m * pieces
    lag = min(m, lag_rows) * pieces
    piece_max = x.new_empty((m, pieces), dtype=torch.float32)
    piece_sum = x.new_empty((m, pieces), dtype=torch.float32)
    sync = x.new_zeros(m + 1, dtype=torch.int32)
    for program in hl.grid(total + lag):
        ticket = hl.atomic_add(sync, [m], 1)
        if ticket < total:
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
        if ticket >= lag:
            late_row = (ticket - lag) // pieces
            late_begin = ((ticket - lag) % pieces) * piece_len
            late_end = min(n, late_begin + piece_len)
            row_max = hl.zeros([], dtype=torch.float32)
            inv_sum = hl.zeros([], dtype=torch.float32)
            for tile_n in hl.tile(late_begin, late_end, block_size=block_n):
                loaded = hl.load(x, [late_row, tile_n], eviction_policy="evict_first")
                if tile_n.begin == late_begin:
                    hl.wait(sync, [late_row], signal=pieces)
                    maxes = piece_max[late_row, :]
                    row_max = torch.amax(maxes, dim=0)
                    inv_sum = 1.0 / torch.sum(piece_sum[late_row, :] * torch.exp(maxes - row_max), dim=0)
                out[late_row, tile_n] = (torch.exp(loaded.to(torch.float32) - row_max) * inv_sum).to(out.dtype)
    return out


@helion.kernel(static_shapes=False)
def lagged_softmax_bwd(grad_out: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    m, n = out.size()
    grad_in = torch.empty_like(out)
    lag_rows = hl.register_tunable("lag_rows", helion.EnumFragment((1, 2, 4, 8, 16)))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment((1, 2, 4)))
    block_n = hl.register_block_size(256, n)
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    total = m * pieces
    lag = min(m, lag_rows) * pieces
    piece_dot = out.new_empty((m, pieces), dtype=torch.float32)
    sync = out.new_zeros(m + 1, dtype=torch.int32)
    for program in hl.grid(total + lag):
        ticket = hl.atomic_add(sync, [m], 1)
        if ticket < total:
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
        if ticket >= lag:
            late_row = (ticket - lag) // pieces
            late_begin = ((ticket - lag) % pieces) * piece_len
            late_end = min(n, late_begin + piece_len)
            row_dot = hl.zeros([], dtype=torch.float32)
            for tile_n in hl.tile(late_begin, late_end, block_size=block_n):
                y = hl.load(out, [late_row, tile_n], eviction_policy="evict_first")
                dy = hl.load(grad_out, [late_row, tile_n], eviction_policy="evict_first")
                if tile_n.begin == late_begin:
                    hl.wait(sync, [late_row], signal=pieces)
                    row_dot = torch.sum(piece_dot[late_row, :], dim=0)
                grad_in[late_row, tile_n] = (y.to(torch.float32) * (dy.to(torch.float32) - row_dot)).to(grad_in.dtype)
    return grad_in


DEFAULT_CONFIGS = [{"block_sizes": [8192], "lag_rows": lag, "piece_tiles": t, "num_warps": 8, "num_stages": 1}
                   for lag in (1, 2, 4, 8) for t in (1, 2)]


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    direction, dtype = sys.argv[1], getattr(torch, sys.argv[2])
    dims = [int(v) for v in sys.argv[3:]]
    configs = json.loads(os.environ.get("PROBE_CONFIGS", "null")) or DEFAULT_CONFIGS
    timer = Timer(device)
    rows = []
    for m, n in zip(dims[0::2], dims[1::2]):
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(m, n, device=device, dtype=dtype, generator=g) * 4
        if direction == "fwd":
            args = (x,)
            ref = torch.softmax(x.double(), dim=-1)
            fns = {"library": lambda: _fwd_impl(x)}
            kernel = lagged_softmax_fwd
        else:
            y = torch.softmax(x.double(), dim=-1).to(dtype)
            dy = torch.randn(m, n, device=device, dtype=dtype, generator=g)
            args = (dy, y)
            ref = y.double() * (dy.double() - (dy.double() * y.double()).sum(-1, keepdim=True))
            fns = {"library": lambda: _bwd_impl(dy, y)}
            kernel = lagged_softmax_bwd
        for config in configs:
            compiled = kernel.bind(args).compile_config(dict(config))
            fns[json.dumps(config)] = (lambda c: lambda: c(*args))(compiled)
        err = {name: (fn().double() - ref).abs().max().item() for name, fn in fns.items()}
        if not device.type == "cuda":
            print(json.dumps({"shape": [m, n], "max_err": err}))
            continue
        times = {name: [] for name in fns}
        for _ in range(7):
            for name, fn in fns.items():
                times[name].append(timer.device_us(fn))
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"direction": direction, "dtype": sys.argv[2], "shape": [m, n], "us": med,
               "speedup": {k: med["library"] / v for k, v in med.items()}, "max_err": err}
        print(json.dumps(row), flush=True)
        rows.append(row)
    name = f"lagged_split_{direction}_{sys.argv[2]}.json"
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), name), "w"), indent=1)


if __name__ == "__main__":
    main()
