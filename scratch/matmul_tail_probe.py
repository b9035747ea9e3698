"""Probe: what the split-K finish costs the decode matmul (64x4096x4096 bf16, the table's split_k = 2
config). Times the library's kernel against DSL variants of its split-K loop, one process,
benchmarks.timing.Timer (CUDA events, L2 write-flushed), alternating rounds:
- partials_only: each piece stores its fp32 partial tile and stops (no signal, no finish: the
  output's split rows stay unwritten, it shows the finish's cost);
- own_in_registers: the library's loop, but the last piece adds the other pieces' partials to its
  own accumulator (still in registers) instead of re-reading its own partial;
- relaxed_signal: the library's loop with a relaxed arrival atomic (no release/acquire fences: may
  read stale partials; it shows the fences' cost).
Run: python3 scratch/matmul_tail_probe.py [M N K ...]   (defaults to 64 4096 4096); PROBE_OVERRIDES
(a JSON list of config overrides) adds each variant again under each override."""
import json, os, statistics, sys
sys.path.insert(0, ".")
import torch
import build_tools.dsl as helion
import build_tools.dsl.language as hl
import helion_kernels as hk
from benchmarks.timing import Timer

VARIANTS = ("partials_only", "relaxed_signal", "own_in_registers")


@helion.kernel(static_shapes=False)
def split_k_variant(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The library's matmul (kernels_src/matmul.py) with its split-K loop changed by `variant`; the
    unsplit loop is kept so that the library's config fits."""
    m, k = a.size()
    n = b.size(1)
    out = a.new_empty((m, n))
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    block_k = hl.register_block_size(k)
    split_k = hl.register_tunable("split_k", helion.PowerOfTwoFragment(1, 16, 1))
    variant = hl.register_tunable("variant", helion.EnumFragment(VARIANTS))
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
        if variant != "partials_only":
            tile_id = tile_m.id * tiles_n + tile_n.id
            if variant == "relaxed_signal":
                arrived = hl.signal(arrivals, [tile_id], op="atomic_add", sem="relaxed")
            else:
                arrived = hl.signal(arrivals, [tile_id], op="atomic_add", sem="acq_rel")
            if arrived == split_k - 1:
                total = hl.zeros([tile_m, tile_n], dtype=torch.float32)
                if variant == "own_in_registers":
                    total = acc
                for piece in hl.grid(split_k):
                    if variant != "own_in_registers" or piece != tile_s.begin:
                        total = total + partial[piece, tile_m, tile_n]
                out[tile_m, tile_n] = total.to(out.dtype)
                hl.signal(arrivals, [tile_id], signal=0, skip_sync=True)
    return out


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dims = [int(v) for v in sys.argv[1:]] or [64, 4096, 4096]
    timer = Timer(device)
    rows = []
    for m, n, k in zip(dims[0::3], dims[1::3], dims[2::3]):
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16, generator=g)
        b = torch.randn(k, n, device=device, dtype=torch.bfloat16, generator=g) / k ** 0.5
        config = dict(hk.explain(hk.matmul, a, b).forward[0].config)
        fns = {"library": lambda: hk.matmul(a, b)}
        overrides = [{}] + json.loads(os.environ.get("PROBE_OVERRIDES", "[]"))
        variants = [(name + (f" {o}" if o else ""), {**config, **o, "variant": name})
                    for o in overrides for name in VARIANTS]
        bound = split_k_variant.bind((a, b))
        found = bound.config_spec.found  # fewer load/store sites than the library's kernel
        for name, variant_config in variants:
            fitted = {**variant_config, "indexing": variant_config["indexing"][:found.loads + found.stores],
                      "load_eviction_policies": variant_config["load_eviction_policies"][:found.loads]}
            compiled = bound.compile_config(fitted)
            try:
                compiled(a, b)
            except Exception as error:  # a variant past the GPU's resources is reported and skipped
                print(json.dumps({"variant": name, "error": str(error)[:200]}), flush=True)
                continue
            fns[name] = (lambda c: lambda: c(a, b))(compiled)
        ref = torch.mm(a.double(), b.double())
        err = {name: (fn().double() - ref).abs().max().item() for name, fn in fns.items() if "partials_only" not in name}
        times = {name: [] for name in fns}
        for _ in range(7):
            for name, fn in fns.items():
                times[name].append(timer.device_us(fn))
        row = {"shape": [m, n, k], "config": config, "us": {k2: statistics.median(v) for k2, v in times.items()}, "max_err": err}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "matmul_tail_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
