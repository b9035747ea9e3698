"""Probe: split-row softmax forward where one work item is the same piece of `rows_per_item` rows.
A program walks its piece of each of its rows once (max and sum of exp), publishing each, and only
then waits for the first row's other pieces and writes it, then the next row: the wait for a row
overlaps the first passes of the item's later rows, so it is paid about once per item instead of
once per piece. Timed (benchmarks.timing.Timer: CUDA events, L2 write-flushed, alternating rounds)
against the library's softmax in one process. An experiment, not library code.
`split_softmax_variants` removes one part of the one-row structure at a time (see its docstring).
Run: python3 scratch/softmax_group_probe.py M N [M N ...]; PROBE_CONFIGS = JSON list of configs
(key "kernel": "grouped" (default) or "variants")."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import build_tools.dsl as helion
import build_tools.dsl.language as hl
import helion_kernels as hk
from benchmarks.timing import Timer


@helion.kernel(static_shapes=False)
def grouped_split_softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    group = hl.register_tunable("rows_per_item", helion.EnumFragment((1, 2, 4)))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment((1, 2, 4)))
    block_n = hl.register_block_size(256, n)
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    items = helion.cdiv(m, group) * pieces
    piece_max = x.new_empty((m, pieces), dtype=torch.float32)
    piece_sum = x.new_empty((m, pieces), dtype=torch.float32)
    sync = x.new_zeros(m + 1, dtype=torch.int32)
    for program in hl.grid(items):
        ticket = hl.atomic_add(sync, [m], 1)
        first_row = (ticket // pieces) * group
        piece = ticket % pieces
        begin = piece * piece_len
        end = min(n, begin + piece_len)
        for g in hl.grid(group):
            row = first_row + g
            if row < m:
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
        for g in hl.grid(group):
            row = first_row + g
            if row < m:
                hl.wait(sync, [row], signal=pieces)
                maxes = piece_max[row, :]
                row_max = torch.amax(maxes, dim=0)
                inv_sum = 1.0 / torch.sum(piece_sum[row, :] * torch.exp(maxes - row_max), dim=0)
                for tile_n in hl.tile(begin, end, block_size=block_n):
                    values = hl.load(x, [row, tile_n], eviction_policy="evict_first").to(torch.float32)
                    out[row, tile_n] = (torch.exp(values - row_max) * inv_sum).to(out.dtype)
    return out


@helion.kernel(static_shapes=False)
def split_softmax_variants(x: torch.Tensor) -> torch.Tensor:
    """The library's split-row forward (one row per item) with switches that remove one part each:
    `variant` "full" (the library's structure), "bf16_max" (the piece's max taken on the loaded bf16
    values, the fp32 conversion only feeding exp), "no_wait" (no exchange: each piece normalized by
    its own max and sum, a wrong result that shows the exchange's cost), "no_reread" (the second pass
    writes without reading x, a wrong result that shows the re-read's cost), "prefetch" (the second
    pass loads its first tile before it waits for the row's other pieces, so that load's latency
    overlaps the wait; the library's structure since a4f5e33), and three that remove parts of the
    exchange from "prefetch" (wrong or racy results, they show each part's cost): "relaxed" (the
    arrival without release fence), "no_partials" (the wait kept, the pieces' partials not loaded:
    each piece normalized by its own), "relaxed_no_partials" (both)."""
    m, n = x.size()
    out = torch.empty_like(x)
    variant = hl.register_tunable("variant", helion.EnumFragment(("full", "bf16_max", "no_wait", "no_reread", "prefetch", "relaxed", "no_partials", "relaxed_no_partials")))
    piece_tiles = hl.register_tunable("piece_tiles", helion.EnumFragment((1, 2, 4)))
    block_n = hl.register_block_size(256, n)
    piece_len = block_n * piece_tiles
    pieces = helion.cdiv(n, piece_len)
    piece_max = x.new_empty((m, pieces), dtype=torch.float32)
    piece_sum = x.new_empty((m, pieces), dtype=torch.float32)
    sync = x.new_zeros(m + 1, dtype=torch.int32)
    for program in hl.grid(m * pieces):
        ticket = hl.atomic_add(sync, [m], 1)
        row = ticket // pieces
        piece = ticket % pieces
        begin = piece * piece_len
        end = min(n, begin + piece_len)
        local_max = hl.full([], float("-inf"), dtype=torch.float32)
        local_sum = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            if variant == "bf16_max":
                loaded = x[row, tile_n]
                new_max = torch.maximum(local_max, torch.amax(loaded, dim=0).to(torch.float32))
                tile_sum = torch.sum(torch.exp(loaded.to(torch.float32) - new_max), dim=0)
            else:
                values = x[row, tile_n].to(torch.float32)
                new_max = torch.maximum(local_max, torch.amax(values, dim=0))
                tile_sum = torch.sum(torch.exp(values - new_max), dim=0)
            local_sum = local_sum * torch.exp(local_max - new_max) + tile_sum
            local_max = new_max
        if variant == "no_wait":
            row_max = local_max
            inv_sum = 1.0 / local_sum
        elif variant in ("prefetch", "no_partials"):
            piece_max[row, piece] = local_max
            piece_sum[row, piece] = local_sum
            hl.signal(sync, [row], op="atomic_add")
            row_max = hl.zeros([], dtype=torch.float32)
            inv_sum = hl.zeros([], dtype=torch.float32)
        elif variant in ("relaxed", "relaxed_no_partials"):
            piece_max[row, piece] = local_max
            piece_sum[row, piece] = local_sum
            hl.signal(sync, [row], op="atomic_add", sem="relaxed")
            row_max = hl.zeros([], dtype=torch.float32)
            inv_sum = hl.zeros([], dtype=torch.float32)
        else:
            piece_max[row, piece] = local_max
            piece_sum[row, piece] = local_sum
            hl.signal(sync, [row], op="atomic_add")
            hl.wait(sync, [row], signal=pieces)
            maxes = piece_max[row, :]
            row_max = torch.amax(maxes, dim=0)
            inv_sum = 1.0 / torch.sum(piece_sum[row, :] * torch.exp(maxes - row_max), dim=0)
        for tile_n in hl.tile(begin, end, block_size=block_n):
            if variant == "no_reread":
                out[row, tile_n] = (hl.zeros([tile_n], dtype=torch.float32) + inv_sum * torch.exp(-row_max)).to(out.dtype)
            elif variant in ("prefetch", "relaxed"):
                loaded = hl.load(x, [row, tile_n], eviction_policy="evict_first")
                if tile_n.begin == begin:
                    hl.wait(sync, [row], signal=pieces)
                    maxes = piece_max[row, :]
                    row_max = torch.amax(maxes, dim=0)
                    inv_sum = 1.0 / torch.sum(piece_sum[row, :] * torch.exp(maxes - row_max), dim=0)
                out[row, tile_n] = (torch.exp(loaded.to(torch.float32) - row_max) * inv_sum).to(out.dtype)
            elif variant in ("no_partials", "relaxed_no_partials"):
                loaded = hl.load(x, [row, tile_n], eviction_policy="evict_first")
                if tile_n.begin == begin:
                    hl.wait(sync, [row], signal=pieces)
                    row_max = local_max
                    inv_sum = 1.0 / local_sum
                out[row, tile_n] = (torch.exp(loaded.to(torch.float32) - row_max) * inv_sum).to(out.dtype)
            else:
                values = hl.load(x, [row, tile_n], eviction_policy="evict_first").to(torch.float32)
                out[row, tile_n] = (torch.exp(values - row_max) * inv_sum).to(out.dtype)
    return out


DEFAULT_CONFIGS = [{"block_sizes": [8192], "rows_per_item": g, "piece_tiles": t, "num_warps": 8, "num_stages": 1}
                   for g in (1, 2, 4) for t in (1, 2)]
KERNELS = {"grouped": grouped_split_softmax, "variants": split_softmax_variants}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dims = [int(v) for v in sys.argv[1:]] or [4096, 131072]
    configs = json.loads(os.environ.get("PROBE_CONFIGS", "null")) or DEFAULT_CONFIGS
    timer = Timer(device)
    rows = []
    for m, n in zip(dims[0::2], dims[1::2]):
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(m, n, device=device, dtype=torch.bfloat16, generator=g) * 4
        ref = torch.softmax(x.double(), dim=-1)
        fns = {"library": lambda: hk.softmax(x, -1)}
        for config in configs:
            config = dict(config)
            kernel = KERNELS[config.pop("kernel", "grouped")]
            compiled = kernel.bind((x,)).compile_config(config)
            fns[json.dumps(config)] = (lambda c: lambda: c(x))(compiled)
        err = {name: (fn().double() - ref).abs().max().item() for name, fn in fns.items()}
        times = {name: [] for name in fns}
        for _ in range(5):
            for name, fn in fns.items():
                times[name].append(timer.device_us(fn))
        row = {"shape": [m, n], "us": {k: statistics.median(v) for k, v in times.items()}, "max_err": err}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "softmax_group_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
