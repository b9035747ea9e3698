"""Probe: the causal forward as one key loop with the causal mask on every tile (the diagonal tile
inside the pipeline, with its two dots overlapped like every other step), against the shipped two
loops (unmasked tiles, then the diagonal loop), on the table entries' configs, in one process
(benchmarks.timing.Timer rounds, L2 flushed). Gluon entries, after `relative_masks` made the mask
one compare and one select per element.

    python3 scratch/attention_fwd_masked_loop_probe.py OUT_DIR [warm I]

`warm I` compiles shape I's variants (and, for the first shape of each head dim, checks them
against float64 at odd shapes) so that parallel processes fill Triton's cache before the timing.
Variants: "masked loop" (the entry's tail peeling: for lengths that are multiples of the key tile the
whole-tile loop then holds the diagonal and the peeled tail is empty), "masked loop, relative" (with
`relative_masks`), "masked loop, branch" (that module with each mask under a run-time branch taken
only by the key tiles that reach past the program's first row; the first run, 2026-11-28, also
timed the loop unpeeled, with the key-length bound masked on every tile: 0.68-0.86x), and "one loop (wrong)" (the tile cost probe's edit: the
same dots unmasked, the bound those variants can reach).
"""
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import build_tools.dsl as helion  # noqa: E402
import build_tools.dsl.language as hl  # noqa: E402
from benchmarks.timing import Timer  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402
from kernels_src.attention import (LN2, LOG2E, attention_fwd, cost_fwd, make_fwd_inputs, reference_fwd,  # noqa: E402
                                   tolerance)
from scratch.attention_fwd_tile_cost_probe import edited  # noqa: E402


@helion.kernel(static_shapes=False)
def attention_fwd_masked_loop(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: hl.constexpr, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    batch, q_heads, q_len, head_dim = q.size()
    kv_heads = k.size(1)
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    group = q_heads // kv_heads
    qk_scale = scale * LOG2E
    block_m = hl.register_block_size(q_len)
    block_n = hl.register_block_size(kv_len)
    out = torch.empty_like(q)
    lse = torch.empty([batch, q_heads, q_len], dtype=torch.float32, device=q.device)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        kv_h = h // group
        q_tile = q[b, h, tile_m, :]
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.full([tile_m], 1.0, dtype=torch.float32)
        acc = hl.zeros([tile_m, head_dim], dtype=torch.float32)
        for tile_n in hl.tile(0, min(tile_m.end, kv_len), block_size=block_n):
            k_tile = k[b, kv_h, tile_n, :]
            scores = hl.dot(q_tile, k_tile.T, out_dtype=torch.float32) * qk_scale
            scores = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], scores, float("-inf"))
            new_max = torch.maximum(row_max, torch.amax(scores, dim=1))
            probs = torch.exp2(scores - new_max[:, None])
            rescale = torch.exp2(row_max - new_max)
            row_sum = row_sum * rescale + torch.sum(probs, dim=1)
            v_tile = v[b, kv_h, tile_n, :]
            acc = hl.dot(probs.to(v_tile.dtype), v_tile, acc=acc * rescale[:, None])
            row_max = new_max
        out[b, h, tile_m, :] = (acc / row_sum[:, None]).to(out.dtype)
        lse[b, h, tile_m] = (row_max + torch.log2(row_sum)) * LN2
    return out, lse


SHAPES = [{"B": b, "H": 32, "Hkv": hkv, "Sq": s, "Sk": s, "D": d, "causal": True}
          for b, hkv, s, d in ((4, 32, 1024, 128), (4, 32, 4096, 128), (8, 8, 1024, 128), (1, 8, 16384, 128),
                               (4, 32, 1024, 64), (4, 32, 2048, 64))]
CHECK_SHAPES = [{"B": 1, "H": 2, "Hkv": 1, "Sq": sq, "Sk": sk, "D": d, "causal": True}
                for sq, sk in ((300, 300), (65, 1), (200, 333), (333, 200), (1, 77), (256, 256)) for d in (64, 128)]
# The one-loop kernel has no diagonal loop: its per-loop and per-site lists keep the first loop's.
ONE_LOOP_LENGTHS = {"indexing": 5, "load_eviction_policies": 3, "range_num_stages": 1, "range_peel_tails": 1,
                    "range_unroll_factors": 1, "range_warp_specializes": 1}


CAUSAL_WHERE = re.compile(r"^(\s*)(v_\d+) = gl\.where\((.*<=.*), (v_\d+), float\('-inf'\)\)$", re.M)
ROW_OFFSET = re.compile(r"\((offset_\d+) \+ \(WG \* ROWS")
KEY_OFFSET = re.compile(r"(offset_\d+)\)\)\)$|\((offset_\d+) \+ gl\.arange\(0, _BLOCK_SIZE_1")


def branched(source: str) -> tuple[str, int]:
    """`source` with each causal mask (a select to -inf on a `<=` of key and row indices) under a
    branch taken only where the key tile reaches past the program's first row: the unmasked steps of
    the one loop skip the compare and select."""
    def edit(match):
        indent, out, cond, value = match.groups()
        row = ROW_OFFSET.search(cond).group(1)
        key = next(g for g in KEY_OFFSET.search(cond).groups() if g)
        return (f"{indent}{out} = {value}\n{indent}if {key} + _BLOCK_SIZE_1 > {row}:\n"
                f"{indent}    {out} = gl.where({cond}, {value}, float('-inf'))")
    return CAUSAL_WHERE.subn(edit, source)


def variants(shape, dtype) -> tuple:
    """(config, {label: the generated module's source}) for the shape's table config."""
    config = dict(DISPATCHER.resolve("attention_fwd", torch.device("cuda"), dtype, shape).config)
    args = make_fwd_inputs(shape, dtype, "cuda", 0)
    shipped = attention_fwd.bind(args)
    sources = {"shipped": shipped.to_triton_code(shipped.config_spec.normalize(Config(config)))}
    one = {key: (value[:ONE_LOOP_LENGTHS[key]] if key in ONE_LOOP_LENGTHS and isinstance(value, (list, tuple)) else value)
           for key, value in config.items()}
    bound = attention_fwd_masked_loop.bind(args)
    for label, extra in (("masked loop", {}), ("masked loop, relative", {"relative_masks": True})):
        sources[label] = bound.to_triton_code(bound.config_spec.normalize(Config({**one, **extra})))
    sources["masked loop, branch"] = branched(sources["masked loop, relative"])[0]
    sources["one loop (wrong)"] = edited(sources["shipped"], "one loop")
    return config, sources


def load(source):
    module = load_module(source)
    return getattr(module, "attention_fwd" if hasattr(module, "attention_fwd") else "attention_fwd_masked_loop")


def check(base, sources, dtype) -> list:
    """Each variant (but the wrong one) against float64 at the odd shapes of the base's head dim."""
    rows = []
    rtol, atol = tolerance(dtype)
    for shape in CHECK_SHAPES:
        if shape["D"] != base["D"]:
            continue
        args = make_fwd_inputs(shape, dtype, "cuda", 1)
        ref_out, ref_lse = reference_fwd(*args)
        for label, source in sources.items():
            if "wrong" in label:
                continue
            out, lse = load(source)(*args)
            errors = [(got.double() - ref).abs().max().item() for got, ref in ((out, ref_out), (lse, ref_lse))]
            ok = all(torch.allclose(got.double(), ref, rtol=rtol, atol=atol) for got, ref in ((out, ref_out), (lse, ref_lse)))
            rows.append({"entry": base, "shape": shape, "variant": label, "errors": errors, "ok": ok})
            print("CHECK", "ok " if ok else "BAD", f"{label:22s}", json.dumps(shape), errors, flush=True)
    return rows


def warm(out_dir: Path, index: int) -> None:
    shape, dtype = SHAPES[index], torch.bfloat16
    _, sources = variants(shape, dtype)
    args = make_fwd_inputs(shape, dtype, "cuda", 0)
    for label, source in sources.items():
        try:
            load(source)(*args)
        except Exception as error:  # noqa: BLE001 - the timing run reports it
            print("WARM", label, type(error).__name__, str(error)[-300:], flush=True)
    if all(s["D"] != shape["D"] for s in SHAPES[:index]):
        (out_dir / f"masked_loop_check_{index}.json").write_text(json.dumps(check(shape, sources, dtype), indent=1))


def main() -> None:
    out_dir = Path(sys.argv[1])
    if len(sys.argv) > 3 and sys.argv[2] == "warm":
        return warm(out_dir, int(sys.argv[3]))
    timer = Timer(torch.device("cuda", 0))
    results = []
    for shape in SHAPES:
        dtype = torch.bfloat16
        args = make_fwd_inputs(shape, dtype, "cuda", 0)
        config, sources = variants(shape, dtype)
        fns, notes, outs = {}, {}, {}
        for label, source in sources.items():
            try:
                fn = load(source)
                outs[label] = fn(*args)[0]
                fns[label] = (lambda f: lambda: f(*args))(fn)
            except Exception as error:  # noqa: BLE001 - reported per variant
                notes[label] = f"{type(error).__name__}: {str(error)[-300:]}"
        times = {label: statistics.median(runs) for label, runs in timer.device_rounds(fns, rounds=5).items()}
        flops = cost_fwd(shape, dtype)[0]
        diffs = {label: (o.float() - outs["shipped"].float()).abs().max().item() for label, o in outs.items()}
        row = {"shape": shape, "config": {k: config.get(k) for k in ("backend", "block_sizes", "consumer_groups",
                                                                       "num_stages", "maxnreg", "pid_type")},
               "us": times, "max_diff_vs_shipped": diffs, "notes": notes}
        print(json.dumps(shape), row["config"], flush=True)
        for label, us in times.items():
            print(f"   {label:22s} {us:9.1f} us  {flops / us / 1e6:6.0f} TFLOP/s  {times['shipped'] / us:.3f}x"
                  f"  diff {diffs.get(label, float('nan')):.1e}", flush=True)
        for label, note in notes.items():
            print(f"   {label:22s} {note}", flush=True)
        results.append(row)
        (out_dir / "masked_loop_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
