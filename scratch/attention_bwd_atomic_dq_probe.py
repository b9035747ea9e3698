"""Probe: the attention backward as FlashAttention-2 writes it, five dots per tile pair in one main
kernel (dq accumulated into an fp32 buffer with atomic adds from the dk/dv programs), against the
shipped two-kernel form (seven dots: the dq kernel recomputes the scores and dP) and cuDNN.

Kernels: delta per query tile; dk, dv and dq's parts per key tile of a kv head; dq converted to the
input dtype. The dk/dv loop's config is the shipped entry's (its dkv block sizes, warps, stages,
backend); `check` runs it through Triton's interpreter (CPU) against the float64 reference,
`compile` cross-compiles it for sm_90 under each config, `time` (GPU) times it against the
shipped module and cuDNN in one process (benchmarks.timing.Timer) and writes $OUT/atomic_dq.json.
`tma` (GPU) times, at one config per head dim, the per-element atomics against a tile-wide TMA
reduce-add (the generated source's atomic line rewritten by hand to a tensor descriptor's
`atomic_add`, which the DSL does not emit), and the two-kernel form under the same Triton backend,
and writes $OUT/tma_dq.json.
Run: PYTHONPATH=. python3 scratch/attention_bwd_atomic_dq_probe.py check|compile|time|tma
"""
from __future__ import annotations

import json
import os
import re
import statistics
import sys

import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from kernels_src import attention

LOG2E = attention.LOG2E


@helion.kernel(static_shapes=False)
def attention_bwd_atomic_dq(grad_out, q, k, v, out, lse, causal: hl.constexpr, scale: float):
    batch, q_heads, q_len, head_dim = q.size()
    kv_heads = k.size(1)
    kv_len = k.size(2)
    head_dim = hl.specialize(head_dim)
    group = q_heads // kv_heads
    qk_scale = scale * LOG2E
    row_block_m = hl.register_block_size(q_len)
    dkv_block_n = hl.register_block_size(kv_len)
    dkv_block_m = hl.register_block_size(q_len)
    delta = torch.empty([batch, q_heads, q_len], dtype=torch.float32, device=q.device)
    grad_q_sum = torch.zeros([batch, q_heads, q_len, head_dim], dtype=torch.float32, device=q.device)
    grad_q = torch.empty_like(q)
    grad_k = torch.empty_like(k)
    grad_v = torch.empty_like(v)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[row_block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        delta[b, h, tile_m] = torch.sum(grad_out[b, h, tile_m, :].to(torch.float32) * out[b, h, tile_m, :].to(torch.float32), dim=1)
    for tile_n, tile_h, tile_b in hl.tile([kv_len, kv_heads, batch], block_size=[dkv_block_n, 1, 1]):
        b = tile_b.begin
        kv_h = tile_h.begin
        k_tile = k[b, kv_h, tile_n, :]
        v_tile = v[b, kv_h, tile_n, :]
        acc_k = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        acc_v = hl.zeros([tile_n, head_dim], dtype=torch.float32)
        masked_end = min(tile_n.end, q_len) if causal else 0
        for head in hl.grid(group):
            h = kv_h * group + head
            if causal:
                for tile_m in hl.tile(tile_n.begin, masked_end, block_size=dkv_block_m):
                    q_tile = q[b, h, tile_m, :]
                    do_tile = grad_out[b, h, tile_m, :]
                    lse_log2 = lse[b, h, tile_m] * LOG2E
                    probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                    probs_t = torch.where(tile_n.index[:, None] <= tile_m.index[None, :], probs_t, 0.0)
                    acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                    grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                    grad_scores_t = (probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])).to(q_tile.dtype)
                    acc_k = hl.dot(grad_scores_t, q_tile, acc=acc_k)
                    hl.atomic_add(grad_q_sum, [b, h, tile_m, slice(None)], hl.dot(grad_scores_t.T, k_tile, out_dtype=torch.float32))
            for tile_m in hl.tile(masked_end, q_len, block_size=dkv_block_m):
                q_tile = q[b, h, tile_m, :]
                do_tile = grad_out[b, h, tile_m, :]
                lse_log2 = lse[b, h, tile_m] * LOG2E
                probs_t = torch.exp2(hl.dot(k_tile, q_tile.T, out_dtype=torch.float32) * qk_scale - lse_log2[None, :])
                acc_v = hl.dot(probs_t.to(do_tile.dtype), do_tile, acc=acc_v)
                grad_probs_t = hl.dot(v_tile, do_tile.T, out_dtype=torch.float32)
                grad_scores_t = (probs_t * (grad_probs_t - delta[b, h, tile_m][None, :])).to(q_tile.dtype)
                acc_k = hl.dot(grad_scores_t, q_tile, acc=acc_k)
                hl.atomic_add(grad_q_sum, [b, h, tile_m, slice(None)], hl.dot(grad_scores_t.T, k_tile, out_dtype=torch.float32))
        grad_k[b, kv_h, tile_n, :] = (acc_k * scale).to(grad_k.dtype)
        grad_v[b, kv_h, tile_n, :] = acc_v.to(grad_v.dtype)
    for tile_m, tile_h, tile_b in hl.tile([q_len, q_heads, batch], block_size=[row_block_m, 1, 1]):
        b = tile_b.begin
        h = tile_h.begin
        grad_q[b, h, tile_m, :] = (grad_q_sum[b, h, tile_m, :] * scale).to(grad_q.dtype)
    return grad_q, grad_k, grad_v


def check() -> None:
    """Interpreter (CPU) results against the float64 reference at ragged sizes, GQA, causal and not."""
    cases = [({"B": 1, "H": 2, "Hkv": 1, "Sq": 37, "Sk": 37, "D": 16, "causal": c}, c) for c in (False, True)]
    cases += [({"B": 2, "H": 1, "Hkv": 1, "Sq": 19, "Sk": 45, "D": 32, "causal": True}, True),
              ({"B": 1, "H": 1, "Hkv": 1, "Sq": 1, "Sk": 1, "D": 16, "causal": False}, False)]
    for shape, _ in cases:
        args = attention.make_bwd_inputs(shape, torch.float16, "cpu", 0)
        expected = attention.reference_bwd(*args)
        for config in ({"block_sizes": [16, 16, 16]}, {"block_sizes": [32, 16, 8], "num_warps": 8}):
            got = attention_bwd_atomic_dq.bind(args).compile_config(config)(*args)
            for name, g, e in zip("qkv", got, expected):
                torch.testing.assert_close(g.double(), e, rtol=2e-3, atol=2e-3, msg=f"d{name} at {shape} {config}")
        print("ok", shape)


# (shape, configs of the three kernels): the dk/dv kernel's block sizes, warps and stages
def _shape(batch, heads, seq, head_dim, causal):
    return {"B": batch, "H": heads, "Hkv": heads, "Sq": seq, "Sk": seq, "D": head_dim, "causal": causal}


# per head dim: (key block, query block, warps, stages) of the dk/dv kernel, the unspilled ones
DKV_CHOICES = {64: ((128, 64, 8, 2), (128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 8, 3), (64, 128, 8, 2)),
               128: ((128, 64, 8, 2), (128, 64, 8, 3), (64, 64, 8, 2), (128, 32, 8, 3))}


def configs(head_dim: int) -> list[dict]:
    return [{"block_sizes": [64, n, m], "num_warps": w, "num_stages": s, "pid_type": "flat"}
            for n, m, w, s in DKV_CHOICES[head_dim]]
SHAPES = [_shape(4, 32, 4096, 128, False), _shape(4, 32, 4096, 64, False), _shape(4, 32, 4096, 128, True),
          _shape(16, 16, 512, 64, False), _shape(4, 32, 8192, 64, False)]


def compile_all() -> None:
    """Cross-compiles every config for sm_90 (registers, spills) at each head dim."""
    from build_tools.cross_compile import cross_compile
    for head_dim in (64, 128):
        shape = _shape(1, 2, 256, head_dim, False)
        args = attention.make_bwd_inputs(shape, torch.bfloat16, "cpu", 0)
        bound = attention_bwd_atomic_dq.bind(args)
        for config in configs(head_dim):
            facts = [c.ptxas_info() for c in cross_compile(bound, args, config)]
            print(head_dim, config["block_sizes"], config["num_warps"], config["num_stages"],
                  [(f["registers"], f["spill_stores"]) for f in facts])


def time_all() -> None:
    from benchmarks.timing import Timer
    from helion_kernels._ops.attention import _bwd_impl
    device = torch.device("cuda")
    timer = Timer(device)
    rows = []
    for shape in SHAPES:
        args = attention.make_bwd_inputs(shape, torch.bfloat16, device, 0)
        grad_out, q, k, v, out, lse, causal, scale = args
        expected = _bwd_impl(*args)
        fns = {"shipped": lambda: _bwd_impl(*args)}
        errors = {}
        bound = attention_bwd_atomic_dq.bind(args)
        for config in configs(shape["D"]):
            label = json.dumps(config["block_sizes"][1:] + [config["num_warps"], config["num_stages"]])
            try:
                fn = bound.compile_config(config)
                got = fn(*args)
                errors[label] = max(float((g.float() - e.float()).abs().max()) for g, e in zip(got, expected))
                fns[label] = lambda fn=fn: fn(*args)
            except Exception as error:  # noqa: BLE001 - reported per config
                errors[label] = f"{type(error).__name__}: {str(error)[-300:]}"
        from torch.nn.attention import SDPBackend, sdpa_kernel
        leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            cudnn_out = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, scale=scale)
        fns["cudnn"] = lambda: torch.autograd.grad(cudnn_out, leaves, grad_out, retain_graph=True)
        us = {name: statistics.median(v) for name, v in timer.device_rounds(fns, rounds=5).items()}
        row = {"shape": shape, "us": us, "max_diff_vs_shipped": errors,
               "vs_shipped": {name: us["shipped"] / t for name, t in us.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(os.environ.get("OUT", "."), "atomic_dq.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


ATOMIC_LINE = re.compile(r"(\s*)old_\d+ = tl\.atomic_add\(grad_q_sum \+ \(offset_(\d+) \* grad_q_sum_stride_0 \+ "
                         r"(v_\d+) \* grad_q_sum_stride_1 \+ indices_\d+\[:, None\] \* grad_q_sum_stride_2 \+ "
                         r"rindex_0\[None, :\] \* grad_q_sum_stride_3\), (dot_\d+), mask=\((mask_\d+)\[:, None\]\), "
                         r"sem='relaxed', scope='gpu'\)")


def tma_reduce_source(source: str) -> str:
    """The generated source with the dq atomic as a TMA reduce-add of the whole tile: a descriptor
    over grad_q_sum's rows ([B * H * Sq, D], contiguous), the tile's rows past Sq zeroed (they land
    in the next head's rows, or past the tensor's end, where TMA drops them)."""
    def rewrite(match):
        indent, batch_index, head, value, mask = match.groups()
        rows = f"(offset_{batch_index} * grad_q_sum_stride_0 + {head} * grad_q_sum_stride_1) // grad_q_sum_stride_2"
        total = "grad_q_sum_stride_0 // grad_q_sum_stride_2 * batch"
        descriptor = (f"tl.make_tensor_descriptor(grad_q_sum, [{total}, _RDIM_SIZE_0], [grad_q_sum_stride_2, 1], "
                      f"[_BLOCK_SIZE_2, _RDIM_SIZE_0])")
        start = [m for m in re.finditer(r"for (offset_\d+) in tl\.range", source[:match.start()])][-1].group(1)
        return (f"{indent}{descriptor}.atomic_add([{rows} + {start}, 0], "
                f"tl.where({mask}[:, None], {value}, 0.0))")
    rewritten, count = ATOMIC_LINE.subn(rewrite, source)
    assert count >= 1, "no dq atomic found in the generated source"
    return rewritten


def tma_all() -> None:
    import triton
    from benchmarks.timing import Timer
    from build_tools.dsl.kernel import load_module
    from helion_kernels._ops.attention import _bwd_impl
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    device = torch.device("cuda")
    timer = Timer(device)
    chosen = {128: (128, 64, 8, 3), 64: (64, 64, 4, 3)}
    two_kernel = {128: {"block_sizes": [128, 64, 128, 64], "num_warps": 8, "num_stages": 2, "pid_type": "flat"},
                  64: {"block_sizes": [64, 64, 64, 64], "num_warps": 4, "num_stages": 3, "pid_type": "flat"}}
    rows = []
    for shape in SHAPES:
        args = attention.make_bwd_inputs(shape, torch.bfloat16, device, 0)
        expected = _bwd_impl(*args)
        n, m, w, st = chosen[shape["D"]]
        config = {"block_sizes": [64, n, m], "num_warps": w, "num_stages": st, "pid_type": "flat"}
        bound = attention_bwd_atomic_dq.bind(args)
        fns, errors = {"shipped": lambda: _bwd_impl(*args)}, {}
        candidates = {
            "two kernels, Triton": lambda: attention.attention_bwd.bind(args).compile_config(two_kernel[shape["D"]]),
            "element atomics": lambda: bound.compile_config(config),
            "TMA reduce": lambda: getattr(load_module(tma_reduce_source(bound.to_triton_code(config))),
                                          "attention_bwd_atomic_dq"),
            "TMA reduce, TMA loads": lambda: getattr(load_module(tma_reduce_source(bound.to_triton_code(
                {**config, "indexing": "tensor_descriptor"}))), "attention_bwd_atomic_dq"),
        }
        for label, make in candidates.items():
            try:
                fn = make()
                got = fn(*args)
                errors[label] = max(float((g.float() - e.float()).abs().max()) for g, e in zip(got, expected))
                fns[label] = lambda fn=fn: fn(*args)
            except Exception as error:  # noqa: BLE001 - reported per variant
                errors[label] = f"{type(error).__name__}: {str(error)[-300:]}"
        us = {name: statistics.median(v) for name, v in timer.device_rounds(fns, rounds=5).items()}
        row = {"shape": shape, "us": us, "max_diff_vs_shipped": errors,
               "vs_shipped": {name: us["shipped"] / t for name, t in us.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(os.path.join(os.environ.get("OUT", "."), "tma_dq.json"), "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    {"check": check, "compile": compile_all, "time": time_all, "tma": tma_all}[sys.argv[1]]()
