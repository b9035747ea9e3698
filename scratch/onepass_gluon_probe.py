"""Probe: a one-pass attention backward in Gluon. The dk/dv kernel the DSL lowers (dS^T staged in
shared memory by `shared_operands`) is edited to add the fifth dot, dq^T = K^T dS^T over the
warpgroup's keys ([D, queries], K resident, dS^T read from its shared-memory operand), and to add
each step's [queries, D] fp32 piece into a zeroed dq buffer with a TMA bulk reduce
(`cp.reduce.async.bulk.tensor ... add`, Gluon's builder `create_async_tma_reduce`, which Triton
3.6's hopper.tma does not wrap). Delta comes from torch, dq's scale and cast too. Times it (CUDA
events, L2 flushed, alternating rounds) against the two shipped kernels of the same config and
against cuDNN, and checks its outputs against the shipped ones.

    python3 scratch/onepass_gluon_probe.py OUT.json [CASE ...]   (on a Hopper GPU; CASES' indices)
"""
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from tools.config_probe import _entry, _spec  # noqa: E402

REDUCE_BUILTIN = '''
from triton._C.libtriton import ir as _ir
from triton.experimental.gluon.language._core import builtin as _builtin


@_builtin
def tma_reduce_add(desc, coord, src, _semantic=None):
    """Adds the shared-memory tile `src` into `desc`'s tile at `coord` (TMA bulk reduce)."""
    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(_ir.DESCRIPTOR_REDUCE_KIND.ADD, desc.handle, coord, src.handle)
'''


def base_source(shape: dict, overrides: dict, dtype=torch.bfloat16) -> tuple:
    table = json.load(open("tuned_configs/sm_90.json"))
    spec = _spec("attention_bwd")
    entry = _entry(table, "attention_bwd", str(dtype).split(".")[1], shape)
    spec.kernel.reset()
    args = spec.make_inputs({**shape, "B": 1, "H": 2, "Hkv": 2}, dtype, "cpu", 0)
    bound = spec.kernel.bind(args)
    config = bound.config_spec.normalize(Config({**entry["config"], **overrides}))
    return bound.to_triton_code(config), dict(config)


def _sub(pattern: str, repl, text: str, count_at_least: int = 1) -> str:
    new, n = re.subn(pattern, repl, text)
    if n < count_at_least:
        raise SystemExit(f"patch pattern not found ({n}): {pattern}")
    return new


MODES = {
    "beside": "the fifth dot issued beside the accumulating dots of the same tile",
    "after": "issued once the accumulating dots are done",
    "halves": "after, as two dots of half of D each, staged one after the other (half its registers)",
    "split_d": "after, each warpgroup forming its share of D's columns over all the CTA's keys "
               "(FlashAttention-3's split: both groups' dS^T in shared memory, two mbarriers between "
               "the groups; a quarter of the registers and half the reduce traffic)",
}


def one_pass_source(source: str, mode: str = "after") -> str:
    """`source` with the dk/dv kernel (the last Gluon kernel) computing dq too (MODES; a mode
    ending in "_no_reduce" stages dq but adds nothing to the buffer, timing only; "none" only adds
    the parameters: the dk/dv kernel alone)."""
    kv = re.findall(r"^def (_attention_bwd_gluon_[0-9a-f]+)_consumer", source, re.M)[-1]
    reduce = not mode.endswith("_no_reduce")
    mode = mode.removesuffix("_no_reduce")
    split = mode == "split_d"
    # new parameters: the dq buffer's descriptor, the staging tiles and the groups' barriers
    source = source.replace("grad_v_desc_5, _BLOCK", "grad_v_desc_5, dq_desc, _BLOCK")
    source = source.replace("row_1_empty, turn)", "row_1_empty, turn, dq_stage, ds_ready, ds_free)")
    start = source.index(f"def {kv}_consumer")
    end = source.index("\n@gluon.jit", start)
    body = source[start:end]
    cols = "_RDIM_SIZE_0 // GROUPS" if split else "_RDIM_SIZE_0 // 2" if mode == "halves" else "_RDIM_SIZE_0"

    def k_t(group: str, first: str) -> str:
        whole = f"load_14_smem.index(rslot * GROUPS + {group}).reshape([ROWS, _RDIM_SIZE_0])"
        return whole + (f".slice({first}, {cols}, 1)" if cols != "_RDIM_SIZE_0" else "") + ".permute((1, 0))"

    stage = "dq_stage.index(WG).reshape([_BLOCK_SIZE_3, {}])"
    if split:
        dots = ["mbarrier.wait(ds_ready.index(0), dq_i & 1)"]
        dots += [f"a2_tok = warpgroup_mma({k_t(g, 'WG * ' + cols)}, operand_1.index({g}), "
                 + ("dq_zero, use_acc=False" if g == 0 else "a2_tok") + ", is_async=True)" for g in range(2)]
        dots += ["dq_t = warpgroup_mma_wait(0, deps=(a2_tok, ))", "gl.thread_barrier()",
                 "mbarrier.arrive(ds_free.index(0))", "dq_i += 1", "tma.store_wait(0)", "gl.thread_barrier()",
                 f"{stage.format(cols)}.store(gl.permute(dq_t, (1, 0)))"]
        column = f"WG * {cols}"
    else:
        issue = f"a2_tok = warpgroup_mma({k_t('WG', '0')}, operand_1.index(WG), dq_zero, use_acc=False, is_async=True)"
        dots = [] if mode == "beside" else [issue]
        dots += ["dq_t = warpgroup_mma_wait(0, deps=(a2_tok, ))", "tma.store_wait(0)", "gl.thread_barrier()"]
        if mode == "halves":
            dots += [f"{stage.format('_RDIM_SIZE_0')}.slice(0, {cols}, 1).store(gl.permute(dq_t, (1, 0)))",
                     f"a3_tok = warpgroup_mma({k_t('WG', cols)}, operand_1.index(WG), dq_zero, use_acc=False, is_async=True)",
                     "dq_t = warpgroup_mma_wait(0, deps=(a3_tok, ))",
                     f"{stage.format('_RDIM_SIZE_0')}.slice({cols}, {cols}, 1).store(gl.permute(dq_t, (1, 0)))"]
        else:
            dots += [f"{stage.format(cols)}.store(gl.permute(dq_t, (1, 0)))"]
        column = "0"
        if mode == "beside":
            body = _sub(r"(\n(\s+)a1_tok = warpgroup_mma\(operand_1\.index\(WG\), .*\n)", rf"\1\2{issue}\n", body, 4)
            body = body.replace("warpgroup_mma_wait(2, deps=(f0_tok, ))", "warpgroup_mma_wait(3, deps=(f0_tok, ))")
            body = body.replace("warpgroup_mma_wait(2, deps=(f1_tok, ))", "warpgroup_mma_wait(3, deps=(f1_tok, ))")
    dots += ["fence_async_shared()"]
    if reduce:
        dots += [f"tma_reduce_add(dq_desc, [offset_11, v_23, dq_off, {column}], dq_stage.index(WG))"]
    if mode == "none":
        dots = []
    body = body if not dots else _sub(r"(\n(\s+)acc_k_19 = warpgroup_mma_wait\(0, deps=\(a1_tok, \)\)\n)",
                lambda m: m.group(1) + "".join(f"{m.group(2)}{line}\n" for line in dots), body, 4)
    # which query tile operand_1 holds; in split_d the groups hand each other their dS^T
    loops = re.findall(r"n_(offset_\d+) = gl\.cdiv", body)
    parts = re.split(r"(?=\n\s+n_offset_\d+ = gl\.cdiv)", body)
    out = [parts[0]]
    for var, part in zip(loops, parts[1:]):
        def store(m, var=var):
            ind = m.group(2)
            before = f"{ind}if ds_i > 0:\n{ind}    mbarrier.wait(ds_free.index(0), (ds_i - 1) & 1)\n" if split else ""
            after = (f"{ind}gl.thread_barrier()\n{ind}mbarrier.arrive(ds_ready.index(0))\n{ind}ds_i += 1\n"
                     if split else "")
            return "\n" + before + m.group(1)[1:] + m.group(3) + after + f"{ind}dq_off = {var}\n"
        out.append(_sub(r"(\n(\s+)operand_1\.index\(WG\)\.store\(.*\n)(\s+fence_async_shared\(\)\n)", store, part, 2))
    body = "".join(out)
    body = body.replace("    s_zero = gl.zeros(", f"    dq_zero = gl.zeros([{cols}, _BLOCK_SIZE_3], gl.float32, s_layout)\n"
                        "    ds_i = 0\n    dq_i = 0\n    s_zero = gl.zeros(", 1)
    # dk leaves through K's tile, which in split_d the other group reads until its last fifth dot
    last = "    if dq_i > 0:\n        mbarrier.wait(ds_free.index(0), (dq_i - 1) & 1)\n" if split else ""
    body = body.replace("    tma.store_wait(0)\n    load_14_smem", f"{last}    tma.store_wait(0)\n    gl.thread_barrier()\n    load_14_smem", 1)
    source = source[:start] + body + source[end:]
    # the entry kernel allocates the staging tiles and the barriers
    at = source.index("    operand_1 = gl.allocate_shared_memory(", source.index(f"def {kv}("))
    staging = "_RDIM_SIZE_0 // GROUPS" if split else "_RDIM_SIZE_0"
    source = source[:at] + (
        f"    dq_stage = gl.allocate_shared_memory(dq_desc.dtype, [GROUPS, 1, 1, _BLOCK_SIZE_3, {staging}], dq_desc.layout)\n"
        "    ds_ready = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())\n"
        "    ds_free = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())\n"
        "    mbarrier.init(ds_ready.index(0), count=GROUPS)\n"
        "    mbarrier.init(ds_free.index(0), count=GROUPS)\n") + source[at:]
    return source + REDUCE_BUILTIN + f"\n\nONE_PASS_KERNEL = {kv}\n"


def one_pass(mod, config, grad_out, q, k, v, out, lse, scale, mode):
    """(run, kernel): `run()` computes delta (torch), zeroes dq, launches the one-pass kernel and
    scales and casts dq (torch), returning (dq, dk, dv); `kernel()` launches the kernel alone."""
    batch, heads, q_len, dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    block_kv, block_q = config["block_sizes"][2], config["block_sizes"][3]
    groups, stages = config["consumer_groups"], config["num_stages"]
    delta = torch.empty(batch, heads, q_len, dtype=torch.float32, device=q.device)
    dq_acc = torch.empty(batch, heads, q_len, dim, dtype=torch.float32, device=q.device)
    grad_k, grad_v = torch.empty_like(k), torch.empty_like(v)
    desc = mod._tma_descriptor
    rows = block_kv // groups
    descs = [desc(k, [1, 1, rows, dim], list(k.shape)), desc(v, [1, 1, rows, dim], list(v.shape)),
             desc(q, [1, 1, block_q, dim], list(q.shape)), desc(grad_out, [1, 1, block_q, dim], list(grad_out.shape)),
             desc(grad_k, [1, 1, rows, dim], list(grad_k.shape)), desc(grad_v, [1, 1, rows, dim], list(grad_v.shape)),
             desc(dq_acc, [1, 1, block_q, dim // groups if mode.startswith("split_d") else dim], list(dq_acc.shape))]
    args = (kv_len, kv_heads, batch, k, *k.stride(), v, *v.stride(), heads // kv_heads, q_len, q, *q.stride(),
            grad_out, *grad_out.stride(), lse, *lse.stride(), scale * 1.4426950408889634, delta, *delta.stride(),
            scale, grad_k, *grad_k.stride(), grad_v, *grad_v.stride(), *descs)
    grid = ((kv_len + block_kv - 1) // block_kv * kv_heads * batch,)

    def kernel():
        mod.ONE_PASS_KERNEL[grid](*args, block_kv, dim, block_q, groups, stages, 240, num_warps=4)

    def run():
        torch.sum(grad_out.float() * out.float(), dim=-1, out=delta)
        dq_acc.zero_()
        kernel()
        return (dq_acc * scale).to(q.dtype), grad_k, grad_v

    return run, kernel


D128 = dict(B=4, H=32, Hkv=32, Sq=4096, Sk=4096, D=128, causal=False)
D64 = dict(B=4, H=32, Hkv=32, Sq=4096, Sk=4096, D=64, causal=False)
D64_GLUON = {"backend": "gluon", "consumer_groups": 2, "shared_operands": [False, True], "block_sizes": [128, 64, 128, 64]}
CASES = [  # (shape, the dk/dv config's overrides, MODES key); two consumer groups throughout
    (D128, {"shared_operands": [False, True]}, "none"),
    (D128, {"shared_operands": [False, True]}, "split_d_no_reduce"),
    (D128, {"shared_operands": [False, True]}, "halves_no_reduce"),
    (D64, D64_GLUON, "none"),
    (D64, D64_GLUON, "after_no_reduce"),
    (D128, {"shared_operands": [False, True]}, "split_d"),
    (D128, {"shared_operands": [False, True]}, "after"),
    (D128, {"shared_operands": [False, True]}, "beside"),
    (D128, {"shared_operands": [False, True]}, "halves"),
    (D64, D64_GLUON, "after"),
]


def main(path: str, cases: list) -> None:
    from benchmarks.timing import Timer
    timer = Timer(torch.device("cuda", torch.cuda.current_device()))
    spec = _spec("attention_bwd")
    results, peers = [], {}
    for shape, overrides, mode in [CASES[i] for i in cases]:
        row = dict(shape=shape, overrides=overrides, mode=mode)
        try:
            key = json.dumps(shape, sort_keys=True)
            args = spec.make_inputs(shape, torch.bfloat16, "cuda", 0)
            grad_out, q, k, v, out, lse, causal, scale = args
            shipped = load_module(base_source(shape, {})[0])
            source, config = base_source(shape, overrides)
            mod = load_module(one_pass_source(source, mode))
            ref = shipped.attention_bwd(*args)
            run, kernel = one_pass(mod, config, grad_out, q, k, v, out, lse, scale, mode)
            got = run()
            torch.cuda.synchronize()
            row["max_abs_err"] = [float((a.float() - b.float()).abs().max()) for a, b in zip(got, ref)]
            row["ref_max_abs"] = [float(b.float().abs().max()) for b in ref]
            fns = {"one_pass": run, "one_pass_kernel": kernel}
            if key not in peers:
                qs, ks, vs = (t.detach().clone().requires_grad_() for t in (q, k, v))
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                    o = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal, scale=scale)
                fns["two_kernels"] = lambda: shipped.attention_bwd(*args)
                fns["cudnn"] = lambda: torch.autograd.grad(o, (qs, ks, vs), grad_out, retain_graph=True)
            times = {name: statistics.median(runs) for name, runs in timer.device_rounds(fns, rounds=5).items()}
            peers.setdefault(key, {k: t for k, t in times.items() if not k.startswith("one_pass")})
            row["times_us"] = {**times, **peers[key]}
            row["one_pass_vs_two"] = peers[key]["two_kernels"] / times["one_pass"]
            row["one_pass_vs_cudnn"] = peers[key]["cudnn"] / times["one_pass"]
        except Exception as error:  # one case's compile or launch failure
            row["error"] = f"{type(error).__name__}: {str(error)[-400:]}"
        print(json.dumps(row), flush=True)
        results.append(row)
        json.dump(results, open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(i) for i in sys.argv[2:]] or list(range(len(CASES))))
