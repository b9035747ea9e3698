"""Probe: the causal forward with FlashAttention-3's key order (the diagonal key tile first, then
the unmasked tiles), alone and with `chain_loops` (also with the diagonal loop's tail not peeled) (notes/gluon_chain_loops.patch applied), against
the shipped kernel, on the table entries' configs, in one process (benchmarks.timing.Timer rounds,
L2 flushed).

    python3 scratch/attention_fwd_diag_first_probe.py OUT_DIR [warm I]

`warm I` compiles the variants of shape I (and, for the first shape of each head dim, checks them
against float64 at odd shapes) so that parallel processes fill Triton's cache before the timing.

With the diagonal first, a chained query tile's first step (no dot in flight) is the masked tile and
every later step an unmasked one, as in FlashAttention-3; chained in the shipped order, the masked
tile is a steady step with the previous tile's P@V in flight. `check` compares every variant with a
float64 reference at odd shapes first. "one loop" (the tile cost probe's edit) gives wrong results:
it times the same dots in one pipeline without the mask.
"""
import json
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
def attention_fwd_diag_first(
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
        if causal:
            unmasked_end = min(tile_m.begin, kv_len)
            for tile_n in hl.tile(unmasked_end, min(tile_m.end, kv_len), block_size=block_n):
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
        else:
            unmasked_end = kv_len
        for tile_n in hl.tile(0, unmasked_end, block_size=block_n):
            k_tile = k[b, kv_h, tile_n, :]
            scores = hl.dot(q_tile, k_tile.T, out_dtype=torch.float32) * qk_scale
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
          for b, hkv, s, d in ((4, 32, 1024, 128), (4, 32, 4096, 128), (8, 8, 1024, 128), (4, 32, 1024, 64))]
CHECK_SHAPES = [{"B": 1, "H": 2, "Hkv": 1, "Sq": sq, "Sk": sk, "D": d, "causal": True}
                for sq, sk in ((300, 300), (65, 1), (200, 333), (333, 200), (1, 77)) for d in (64, 128)]


def variants(shape, dtype) -> dict:
    """{label: the generated module's source} for the shape's table config."""
    config = dict(DISPATCHER.resolve("attention_fwd", torch.device("cuda"), dtype, shape).config)
    args = make_fwd_inputs(shape, dtype, "cuda", 0)
    sources = {}
    unpeeled = {"range_peel_tails": [False, *config["range_peel_tails"][1:]]}
    for label, kernel, extra in (("shipped", attention_fwd, {}), ("diag first", attention_fwd_diag_first, {}),
                                 ("diag first chained", attention_fwd_diag_first, {"chain_loops": True}),
                                 ("diag first chained, diag unpeeled", attention_fwd_diag_first,
                                  {"chain_loops": True, **unpeeled})):
        bound = kernel.bind(args)
        sources[label] = bound.to_triton_code(bound.config_spec.normalize(Config({**config, **extra})))
    sources["one loop (wrong)"] = edited(sources["shipped"], "one loop")
    return config, sources


def load(source, name):
    module = load_module(source)
    return getattr(module, "attention_fwd" if hasattr(module, "attention_fwd") else name)


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
            out, lse = load(source, "attention_fwd_diag_first")(*args)
            errors = [(got.double() - ref).abs().max().item() for got, ref in ((out, ref_out), (lse, ref_lse))]
            ok = all(torch.allclose(got.double(), ref, rtol=rtol, atol=atol) for got, ref in ((out, ref_out), (lse, ref_lse)))
            rows.append({"entry": base, "shape": shape, "variant": label, "errors": errors, "ok": ok})
            print("CHECK", "ok " if ok else "BAD", f"{label:20s}", json.dumps(shape), errors, flush=True)
    return rows


def warm(out_dir: Path, index: int) -> None:
    shape, dtype = SHAPES[index], torch.bfloat16
    config, sources = variants(shape, dtype)
    args = make_fwd_inputs(shape, dtype, "cuda", 0)
    for label, source in sources.items():
        try:
            load(source, "attention_fwd_diag_first")(*args)
        except Exception as error:  # noqa: BLE001 - the timing run reports it
            print("WARM", label, type(error).__name__, str(error)[-300:], flush=True)
    if all(s["D"] != shape["D"] for s in SHAPES[:index]):
        rows = check(shape, sources, dtype)
        (out_dir / f"diag_first_check_{index}.json").write_text(json.dumps(rows, indent=1))


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
                fn = load(source, "attention_fwd_diag_first")
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
            print(f"   {label:20s} {us:9.1f} us  {flops / us / 1e6:6.0f} TFLOP/s  {times['shipped'] / us:.3f}x"
                  f"  diff {diffs.get(label, float('nan')):.1e}", flush=True)
        for label, note in notes.items():
            print(f"   {label:20s} {note}", flush=True)
        results.append(row)
        (out_dir / "diag_first_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
