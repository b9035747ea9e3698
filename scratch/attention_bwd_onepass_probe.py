"""Probe: a one-pass attention backward written in the DSL (Triton back end), dq accumulated in fp32
by atomics from the dk/dv kernel (FlashAttention-2's schedule), against the shipped two-kernel
backward (table config) and SDPA's cuDNN backward, in one process.

    python3 scratch/attention_bwd_onepass_probe.py OUT_DIR   (on a Hopper GPU)

Three top-level loops: delta = rowsum(dO * O); per key tile, dk/dv and dS·K added into an fp32 dq
buffer; dq cast. Prints per-config times (triton.testing.do_bench medians) and max |diff| against
the shipped backward; writes onepass_probe.json under OUT_DIR.

With `variants` as second argument it times, at one config, the generated module edited at its dq
atomics (timing only where the result is wrong): "pointer" (as generated: one atomic per
element), "descriptor" (a TMA reduce-add of the tile through a device tensor descriptor over the
[B * H * Sq, D] rows: right only where the query tiles divide Sq), "store" (a plain store: wrong),
"none" (no dS·K and no atomics: the dk/dv kernel alone).
"""
import re
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import build_tools.dsl as helion  # noqa: E402
import build_tools.dsl.language as hl  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from kernels_src.attention import LOG2E, attention_bwd, cost_bwd, make_bwd_inputs  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402



def table_config(op: str, shape: dict) -> dict:
    """The config the runtime's dispatcher picks on this GPU for a bf16 call of `shape`."""
    return DISPATCHER.resolve(op, torch.device("cuda"), torch.bfloat16, shape).config


@helion.kernel(static_shapes=False)
def attention_bwd_onepass(
    grad_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    causal: hl.constexpr,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, q_heads, q_len, head_dim = q.size()
    kv_heads = k.size(1)
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    group = q_heads // kv_heads
    qk_scale = scale * LOG2E
    pre_block = hl.register_block_size(q_len)
    block_n = hl.register_block_size(kv_len)
    block_m = hl.register_block_size(q_len)
    fin_block = hl.register_block_size(q_len)
    delta = torch.empty([batch, q_heads, q_len], dtype=torch.float32, device=q.device)
    acc_q = torch.zeros([batch, q_heads, q_len, head_dim], dtype=torch.float32, device=q.device)
    grad_q = torch.empty_like(q)
    grad_k = torch.empty_like(k)
    grad_v = torch.empty_like(v)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[pre_block, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        delta[b, h, tile_m] = torch.sum(grad_out[b, h, tile_m, :].to(torch.float32) * out[b, h, tile_m, :].to(torch.float32), dim=1)
    for tile_n, tile_h, tile_b in hl.tile([kv_len, kv_heads, batch], block_size=[block_n, 1, 1]):
        b = tile_b.begin
        kv_h = tile_h.begin
        k_tile = k[b, kv_h, tile_n, :]
        v_tile = v[b, kv_h, tile_n, :]
        acc_k = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        acc_v = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        if causal:
            masked_end = min(tile_n.end, q_len)
        else:
            masked_end = 0
        for head in hl.grid(group):
            h = kv_h * group + head
            if causal:
                for tile_m in hl.tile(tile_n.begin, masked_end, block_size=block_m):
                    q_tile = q[b, h, tile_m, :]
                    do_tile = grad_out[b, h, tile_m, :]
                    lse_log2 = lse[b, h, tile_m] * LOG2E
                    probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                    probs_t = torch.where(tile_n.index[:, None] <= tile_m.index[None, :], probs_t, 0.0)
                    acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                    grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                    grad_scores_t = (probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])).to(q_tile.dtype)
                    acc_k = hl.dot(grad_scores_t, q_tile, acc=acc_k)
                    hl.atomic_add(acc_q, [b, h, tile_m], hl.dot(grad_scores_t.T, k_tile, out_dtype=torch.float32))
            for tile_m in hl.tile(masked_end, q_len, block_size=block_m):
                q_tile = q[b, h, tile_m, :]
                do_tile = grad_out[b, h, tile_m, :]
                lse_log2 = lse[b, h, tile_m] * LOG2E
                probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                grad_scores_t = (probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])).to(q_tile.dtype)
                acc_k = hl.dot(grad_scores_t, q_tile, acc=acc_k)
                hl.atomic_add(acc_q, [b, h, tile_m], hl.dot(grad_scores_t.T, k_tile, out_dtype=torch.float32))
        grad_k[b, kv_h, tile_n, :] = (acc_k * scale).to(grad_k.dtype)
        grad_v[b, kv_h, tile_n, :] = acc_v.to(grad_v.dtype)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[fin_block, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        grad_q[b, h, tile_m, :] = (acc_q[b, h, tile_m, :] * scale).to(grad_q.dtype)
    return grad_q, grad_k, grad_v


# (keys, queries, warps, stages)
CANDIDATES = [(128, 64, 8, 3), (128, 32, 8, 3), (128, 64, 8, 2), (64, 64, 4, 3), (64, 32, 4, 3), (128, 32, 4, 3)]
SHAPES = [{"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 128, "causal": c} for c in (False, True)] + [
    {"B": 4, "H": 32, "Hkv": 32, "Sq": 1024, "Sk": 1024, "D": 128, "causal": False},
    {"B": 4, "H": 32, "Hkv": 32, "Sq": 2048, "Sk": 2048, "D": 64, "causal": False}]


def bench(fn) -> float:
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def cudnn_ms(args) -> float:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    grad_out, q, k, v, _, _, causal, scale = args
    leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, scale=scale)
    return bench(lambda: torch.autograd.grad(out, leaves, grad_out, retain_graph=True))


def shipped_row(shape: dict) -> tuple:
    """(args, the shipped backward's outputs, a result row with its time and cuDNN's) at `shape`."""
    args = make_bwd_inputs(shape, torch.bfloat16, "cuda", 0)
    bound = attention_bwd.bind(args)
    shipped = bound.compile_config(bound.config_spec.normalize(Config(table_config("attention_bwd", shape))))
    want = shipped(*args)
    return args, want, {"shape": shape, "shipped_ms": bench(lambda: shipped(*args)), "cudnn_ms": cudnn_ms(args)}


def max_diff(got, want) -> float:
    return max(float((g.float() - w.float()).abs().max()) for g, w in zip(got, want))


ATOMIC = re.compile(r"old_\d+ = tl\.atomic_add\(acc_q \+ \((.*?)\), (dot_\d+), mask=\((.*?)\), sem='relaxed', scope='gpu'\)")


def edited(source: str, variant: str) -> str:
    def replace(match):
        offsets, value, mask = match.groups()
        if variant == "store":
            return f"tl.store(acc_q + ({offsets}), {value}, mask=({mask}))"
        if variant == "none":
            return "pass"
        indices = re.search(r"(indices_\d+)\[:, None\] \* acc_q_stride_2", offsets).group(1)
        start = re.search(rf"{indices} = (\w+) \+ tl\.arange", source).group(1)
        batch = re.search(r"offset_\d+(?= \* acc_q_stride_0)", offsets).group(0)
        head = re.search(r"(\w+)(?= \* acc_q_stride_1)", offsets).group(1)
        return (f"tl.make_tensor_descriptor(acc_q, [batch * kv_heads * group * q_len, _RDIM_SIZE_0], [_RDIM_SIZE_0, 1], "
                f"[_BLOCK_SIZE_2, _RDIM_SIZE_0]).atomic_add([({batch} * kv_heads * group + {head}) * q_len + {start}, 0], {value})")
    return source if variant == "pointer" else ATOMIC.sub(replace, source)


def variants(out_dir: Path) -> None:
    import triton
    from build_tools.dsl.kernel import load_module
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    results = []
    for shape in SHAPES[:2] + SHAPES[3:]:
        args, want, row = shipped_row(shape)
        one = attention_bwd_onepass.bind(args)
        config = one.config_spec.normalize(Config({"block_sizes": [64, 128, 64, 64], "num_warps": 8, "num_stages": 3}))
        source = one.to_triton_code(config)
        for variant in ("pointer", "descriptor", "store", "none"):
            try:
                fn = getattr(load_module(edited(source, variant)), "attention_bwd_onepass")
                got = fn(*args)
                diff = max_diff(got, want)
                row[variant] = {"ms": bench(lambda: fn(*args)), "max_diff_vs_shipped": diff}
            except Exception as error:  # noqa: BLE001 - reported per variant
                row[variant] = {"error": f"{type(error).__name__}: {str(error)[-600:]}"}
            print(shape, variant, row[variant], flush=True)
        print(shape, f"shipped {row['shipped_ms'] * 1e3:.1f} us, cuDNN {row['cudnn_ms'] * 1e3:.1f} us", flush=True)
        results.append(row)
        (out_dir / "onepass_variants.json").write_text(json.dumps(results, indent=1))


# D64 (`d64` as second argument): (keys, queries, warps, stages)
D64_CANDIDATES = [(128, 64, 8, 3), (128, 64, 8, 2), (128, 32, 8, 3), (64, 64, 4, 3), (64, 64, 4, 2),
                  (128, 64, 4, 3), (64, 32, 4, 3), (128, 128, 8, 2)]
D64_SHAPES = [{"B": 4, "H": 32, "Hkv": 32, "Sq": s, "Sk": s, "D": 64, "causal": c}
              for s, c in ((2048, False), (4096, False), (2048, True), (8192, True))] + [
    {"B": 16, "H": 16, "Hkv": 16, "Sq": 512, "Sk": 512, "D": 64, "causal": False}]


def warm(index: int) -> None:
    """Compiles D64 candidate `index` for both causal values at a small shape (fills Triton's cache)."""
    keys, queries, warps, stages = D64_CANDIDATES[index]
    for causal in (False, True):
        args = make_bwd_inputs({"B": 2, "H": 2, "Hkv": 2, "Sq": 256, "Sk": 256, "D": 64, "causal": causal},
                               torch.bfloat16, "cuda", 0)
        one = attention_bwd_onepass.bind(args)
        config = {"block_sizes": [64, keys, queries, 64], "num_warps": warps, "num_stages": stages}
        try:
            one.compile_config(one.config_spec.normalize(Config(config)))(*args)
        except Exception as error:  # noqa: BLE001 - the timing run reports it
            print(config, causal, type(error).__name__, str(error)[-300:], flush=True)


def main() -> None:
    global SHAPES, CANDIDATES
    out_dir = Path(sys.argv[1])
    if sys.argv[2:] == ["variants"]:
        variants(out_dir)
        return
    if sys.argv[2:3] == ["warm"]:
        warm(int(sys.argv[3]))
        return
    if sys.argv[2:] == ["d64"]:
        SHAPES, CANDIDATES = D64_SHAPES, D64_CANDIDATES
    results = []
    for shape in SHAPES:
        args, want, row = shipped_row(shape)
        flops = cost_bwd(shape, torch.bfloat16)[0]
        row["onepass"] = []
        one = attention_bwd_onepass.bind(args)
        for keys, queries, warps, stages in CANDIDATES:
            config = {"block_sizes": [64, keys, queries, 64], "num_warps": warps, "num_stages": stages}
            try:
                fn = one.compile_config(one.config_spec.normalize(Config(config)))
                got = fn(*args)
                diff = max_diff(got, want)
                ms = bench(lambda: fn(*args))
                row["onepass"].append({"config": config, "ms": ms, "max_diff_vs_shipped": diff})
            except Exception as error:  # noqa: BLE001 - reported per config
                row["onepass"].append({"config": config, "error": f"{type(error).__name__}: {str(error)[-400:]}"})
        for item in [{"label": "shipped", "ms": row["shipped_ms"]}, {"label": "cudnn", "ms": row["cudnn_ms"]}] + [
                {"label": str(o["config"]), **o} for o in row["onepass"]]:
            if "ms" in item:
                print(f"{shape} {item['label']}: {item['ms'] * 1e3:.1f} us, {flops / item['ms'] / 1e9:.0f} TFLOP/s, "
                      f"cuDNN/this {row['cudnn_ms'] / item['ms']:.3f} diff {item.get('max_diff_vs_shipped', '')}", flush=True)
            else:
                print(f"{shape} {item['label']}: {item['error']}", flush=True)
        results.append(row)
        (out_dir / "onepass_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
