"""Probe (2026-11-27, twentieth session): the causal attention forward as one loop (Triton 3.6's
Hopper warp specialization takes kernels of one loop only), against the library's two-loop forward
(tuned config): `causal_fwd_one_loop` masks under a run-time branch, the diagonal tiles only
(FlashAttention-3's way), or (tunable `mask_in_branch` False) every key tile. The DSL also masks every tile by the
loop's end (a device value). Checks outputs against the float64 reference.
Run on a GPU: python3 scratch/attention_causal_if_probe.py; locally: ... cross (compiles for sm_90)."""
import json
import statistics
import sys

sys.path.insert(0, ".")
import torch  # noqa: E402

import build_tools.dsl as helion  # noqa: E402
import build_tools.dsl.language as hl  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from kernels_src.attention import LN2, LOG2E  # noqa: E402


@helion.kernel(static_shapes=False)
def causal_fwd_one_loop(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
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
    in_branch = hl.register_tunable("mask_in_branch", helion.EnumFragment((True, False)))
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
            if in_branch:
                if tile_n.end > tile_m.begin:
                    scores = torch.where(tile_n.index[None, :] <= tile_m.index[:, None], scores, float("-inf"))
            else:
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

TD = ["tensor_descriptor"] * 5
VARIANTS = {
    "branch ws 128x128 s1": {"block_sizes": [128, 128], "indexing": TD, "num_warps": 4, "num_stages": 1,
                             "range_warp_specializes": [True], "range_peel_tails": [False]},
    "branch ws 128x64 s2": {"block_sizes": [128, 64], "indexing": TD, "num_warps": 4, "num_stages": 2,
                            "range_warp_specializes": [True], "range_peel_tails": [False]},
    "branch w8 128x64 s3": {"block_sizes": [128, 64], "indexing": TD, "num_warps": 8, "num_stages": 3},
    "branch w4 64x64 s3 ptr": {"block_sizes": [64, 64], "num_warps": 4, "num_stages": 3},
}


def variants():
    """(label, config) of every VARIANTS entry with the mask in a branch and on every tile."""
    for in_branch, name in ((True, "branch"), (False, "masked")):
        for label, config in VARIANTS.items():
            yield label.replace("branch", name), {**config, "mask_in_branch": in_branch}


def cross():
    from build_tools.cross_compile import cross_compile
    args = (*(torch.randn(1, 2, 256, 128).half() for _ in range(3)), 0.088)
    for label, config in variants():
        compiled = cross_compile(causal_fwd_one_loop.bind(args), args, config)
        print(label, "warp specialized:", any("ttg.warp_specialize" in c.asm["ttgir"] for c in compiled))


def main():
    from benchmarks.timing import Timer
    from tools.config_probe import _entry, _spec
    spec = _spec("attention_fwd")
    dtype = torch.bfloat16
    shape = {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 128, "causal": True}
    entry = _entry(json.load(open("tuned_configs/sm_90.json")), "attention_fwd", "bfloat16", shape)
    args = spec.make_inputs(shape, dtype, "cuda", 0)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    runs = {"tuned": (bound.compile_config(bound.config_spec.normalize(Config(entry["config"]))), args)}
    branch_args = (*args[:3], args[4])
    bound = causal_fwd_one_loop.bind(branch_args)
    for label, config in variants():
        runs[label] = (bound.compile_config(bound.config_spec.normalize(Config(config))), branch_args)
    small = spec.make_inputs({**shape, "B": 1, "H": 2, "Hkv": 2, "Sq": 1000, "Sk": 1000}, dtype, "cuda", 1)
    ref_out, ref_lse = spec.reference(*small)
    rtol, atol = spec.tolerance(dtype)
    for label, (fn, _) in runs.items():
        out, lse = fn(*small) if label == "tuned" else fn(*small[:3], small[4])
        ok = torch.allclose(out.double(), ref_out, rtol=rtol, atol=atol) and torch.allclose(lse.double(), ref_lse, rtol=rtol, atol=atol)
        print(label, "right at S1000" if ok else "WRONG at S1000", flush=True)
    timer = Timer(torch.device("cuda", 0))
    times = timer.device_rounds({label: (lambda f, a: lambda: f(*a))(fn, a) for label, (fn, a) in runs.items()}, rounds=7)
    base = statistics.median(times["tuned"])
    for label, t in sorted(times.items(), key=lambda item: statistics.median(item[1])):
        print(f"{label:30s} {statistics.median(t):9.1f} us  {base / statistics.median(t):.3f}x", flush=True)


if __name__ == "__main__":
    cross() if sys.argv[1:] == ["cross"] else main()
