"""Attention config probe: the DSL attention kernels under candidate configs against cuDNN SDPA.

    python3 -m benchmarks.attention_probe --out $OUT [--budget-s 200] [--quick]

On one CUDA GPU, for B=4, H=32, S in {1024, 4096}, D in {64, 128}, causal and not, bf16 (or
--dtype float16), it times
(triton.testing.do_bench, median) `attention_fwd` and `attention_bwd` compiled straight from
kernels_src under each candidate config of CANDIDATES, and SDPA's cuDNN backend (forward, and the
autograd backward of one forward), and reports TFLOP/s from kernels_src.attention's cost model
(4·B·H·visible pairs·D for the forward, 2.5× that for the backward) with the ratio to cuDNN and the
best candidate of each case. Every candidate's outputs are compared with cuDNN's (max |diff|) so a
fast but wrong config stands out; a candidate the config spec would change is reported, not timed. The candidates are compiled first, in parallel worker processes
(Triton's on-disk cache then serves the timed process). Writes `attention_probe.json` under --out
after every case and prints a table; build_tools/default_table.py's attention rule takes the best.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import multiprocessing
import os
import time
from pathlib import Path

import torch

SEQ_LENS = (1024, 4096)
HEAD_DIMS = (64, 128)
BATCH, HEADS = 4, 32
# (op, head dim) -> configs; block_sizes are fwd [query tile, key tile],
# bwd [dq query tile, dq key tile, dk/dv key tile, dk/dv query tile].
CANDIDATES = {
    ("fwd", 64): [([64, 64], 4, 3), ([128, 64], 4, 3), ([128, 64], 4, 4), ([64, 64], 4, 4), ([64, 128], 4, 3),
                  ([128, 32], 4, 3)],
    ("fwd", 128): [([64, 64], 4, 3), ([128, 64], 8, 3), ([128, 128], 8, 2), ([64, 64], 4, 4), ([64, 128], 4, 2),
                   ([64, 32], 4, 3)],
    ("bwd", 64): [([64, 64, 64, 64], 4, 3), ([64, 64, 64, 64], 4, 4), ([64, 64, 64, 32], 4, 3),
                  ([64, 128, 64, 64], 4, 3), ([128, 64, 128, 64], 8, 3), ([64, 64, 64, 64], 4, 2)],
    ("bwd", 128): [([64, 64, 64, 32], 4, 3), ([128, 64, 128, 32], 8, 3), ([64, 64, 64, 32], 4, 4),
                   ([64, 32, 64, 32], 4, 3), ([64, 64, 64, 16], 4, 3), ([64, 64, 64, 32], 4, 2)],
}
DTYPE = torch.bfloat16


def config_of(candidate) -> dict:
    blocks, warps, stages = candidate
    return {"block_sizes": list(blocks), "num_warps": warps, "num_stages": stages}


def _kernel(op: str):
    from kernels_src import attention
    return attention.attention_fwd if op == "fwd" else attention.attention_bwd


def _shape(seq: int, head_dim: int, causal: bool, batch: int = BATCH, heads: int = HEADS) -> dict:
    return {"B": batch, "H": heads, "Hkv": heads, "Sq": seq, "Sk": seq, "D": head_dim, "causal": causal}


_INPUTS: dict = {}


def _inputs(op: str, shape: dict, seed: int = 0) -> tuple:
    """The op's inputs from kernels_src.attention (DTYPE, on the GPU), kept for the case's candidates."""
    from kernels_src import attention
    key = json.dumps((op, shape, seed))
    if key not in _INPUTS:
        if len(_INPUTS) > 2:
            _INPUTS.clear()
        maker = attention.make_fwd_inputs if op == "fwd" else attention.make_bwd_inputs
        _INPUTS[key] = maker(shape, DTYPE, "cuda", seed)
    return _INPUTS[key]


def compiled(op: str, shape: dict, args: tuple, config: dict):
    """The launcher of `op` for `config` (bound to `args`), with the config normalized as given."""
    from build_tools.dsl import Config
    kernel = _kernel(op)
    kernel.reset()
    bound = kernel.bind(args)
    normalized = bound.config_spec.normalize(Config(config))
    changed = {k: (v, normalized[k]) for k, v in config.items() if json.dumps(normalized[k]) != json.dumps(v)}
    if changed:
        raise ValueError(f"the config space adjusts {changed}")
    return bound.compile_config(normalized)


def _warm(dtype: str, task) -> tuple:
    """Worker: compile one (op, D, causal, config) on small inputs so that Triton caches it on disk."""
    global DTYPE
    DTYPE = getattr(torch, dtype)
    op, head_dim, causal, config = task
    try:
        shape = _shape(256, head_dim, causal, batch=2, heads=4)
        args = _inputs(op, shape)
        compiled(op, shape, args, config)(*args)
        torch.cuda.synchronize()
        return task, None
    except Exception as error:  # noqa: BLE001 - reported per config
        return task, f"{type(error).__name__}: {str(error)[-300:]}"


def precompile(tasks: list, workers: int) -> dict:
    context = multiprocessing.get_context("spawn")
    failures = {}
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        for task, error in pool.map(functools.partial(_warm, str(DTYPE).removeprefix("torch.")), tasks):
            if error:
                failures[json.dumps(task)] = error
    return failures


def _bench(fn) -> float:
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def _tflops(op: str, shape: dict, ms: float) -> float:
    from kernels_src import attention
    flops, _ = (attention.cost_fwd if op == "fwd" else attention.cost_bwd)(shape, DTYPE)
    return flops / ms / 1e9


def cudnn_times(shape: dict) -> tuple:
    """(fwd ms, bwd ms, out, (dq, dk, dv)) of SDPA's cuDNN backend on the case's inputs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v, causal, scale = _inputs("fwd", shape)
    grad_out = _inputs("bwd", shape)[0]
    leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        def forward():
            return torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, scale=scale)
        fwd_ms = _bench(forward)
        out = forward()
    bwd_ms = _bench(lambda: torch.autograd.grad(out, leaves, grad_out, retain_graph=True))
    return fwd_ms, bwd_ms, out.detach(), torch.autograd.grad(out, leaves, grad_out)


def ours(op: str, shape: dict, config: dict, fwd_config: dict) -> tuple:
    """(ms, outputs) of our kernel; the backward gets out/lse from our forward under `fwd_config`."""
    q, k, v, causal, scale = _inputs("fwd", shape)
    if op == "fwd":
        args = (q, k, v, causal, scale)
    else:
        grad_out = _inputs("bwd", shape)[0]
        fwd_args = (q, k, v, causal, scale)
        out, lse = compiled("fwd", shape, fwd_args, fwd_config)(*fwd_args)
        args = (grad_out, q, k, v, out, lse, causal, scale)
    launcher = compiled(op, shape, args, config)
    result = launcher(*args)
    return _bench(lambda: launcher(*args)), result


def _max_diff(got, want) -> float:
    got, want = (got,) if isinstance(got, torch.Tensor) else got, (want,) if isinstance(want, torch.Tensor) else want
    return max(float((g.float() - w.float()).abs().max()) for g, w in zip(got, want))


def run(out_dir: Path, budget_s: float, quick: bool) -> dict:
    start = time.time()
    candidates = {key: [config_of(c) for c in (cands[:2] if quick else cands)] for key, cands in CANDIDATES.items()}
    tasks = [(op, d, causal, cfg) for (op, d), cfgs in candidates.items() for causal in (False, True) for cfg in cfgs]
    tasks += [("fwd", d, causal, candidates[("fwd", d)][0]) for d in HEAD_DIMS for causal in (False, True)]
    failures = precompile(list({json.dumps(t): t for t in tasks}.values()), max(1, min(14, (os.cpu_count() or 2) - 2)))
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": str(DTYPE),
              "compile_s": round(time.time() - start, 1), "compile_failures": failures, "cases": []}
    print(f"compiled {len(tasks)} configs in {report['compile_s']} s; failures: {len(failures)}", flush=True)
    for failure in failures.items():
        print("  compile failure:", *failure, flush=True)
    for seq in SEQ_LENS:
        for head_dim in HEAD_DIMS:
            for causal in (False, True):
                if time.time() - start > budget_s:
                    report["cases"].append({"S": seq, "D": head_dim, "causal": causal, "skipped": "budget"})
                    print(f"S={seq} D={head_dim} causal={causal}: not run (budget)", flush=True)
                    continue
                shape = _shape(seq, head_dim, causal)
                fwd_ms, bwd_ms, ref_out, ref_grads = cudnn_times(shape)
                case = {"S": seq, "D": head_dim, "causal": causal,
                        "cudnn": {"fwd": _tflops("fwd", shape, fwd_ms), "bwd": _tflops("bwd", shape, bwd_ms)}}
                for op, reference in (("fwd", ref_out), ("bwd", ref_grads)):
                    rows = []
                    for config in candidates[(op, head_dim)]:
                        if json.dumps((op, head_dim, causal, config)) in failures:
                            continue
                        try:
                            ms, result = ours(op, shape, config, candidates[("fwd", head_dim)][0])
                        except Exception as error:  # noqa: BLE001 - reported per config
                            rows.append({"config": config, "error": f"{type(error).__name__}: {str(error)[-200:]}"})
                            continue
                        got = result[0] if op == "fwd" else result
                        tflops = _tflops(op, shape, ms)
                        rows.append({"config": config, "ms": ms, "tflops": tflops,
                                     "vs_cudnn": tflops / case["cudnn"][op], "max_diff": _max_diff(got, reference)})
                    timed = [r for r in rows if "tflops" in r]
                    case[op] = {"rows": rows, "best": max(timed, key=lambda r: r["tflops"]) if timed else None}
                report["cases"].append(case)
                _print_case(case)
                (out_dir / "attention_probe.json").write_text(json.dumps(report, indent=1))
    (out_dir / "attention_probe.json").write_text(json.dumps(report, indent=1))
    return report


def _print_case(case: dict) -> None:
    head = f"S={case['S']} D={case['D']} causal={case['causal']}"
    for op in ("fwd", "bwd"):
        print(f"{head} {op}: cuDNN {case['cudnn'][op]:.0f} TFLOP/s", flush=True)
        for row in case[op]["rows"]:
            cfg = row["config"]
            label = f"  {cfg['block_sizes']} w{cfg['num_warps']} s{cfg['num_stages']}"
            if "error" in row:
                print(f"{label}: {row['error']}", flush=True)
            else:
                print(f"{label}: {row['tflops']:.0f} TFLOP/s ({row['vs_cudnn']:.2f}x cuDNN), max|diff| {row['max_diff']:.3g}",
                      flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.attention_probe", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(".out"))
    parser.add_argument("--budget-s", type=float, default=200.0, help="stop starting new cases after this many seconds")
    parser.add_argument("--quick", action="store_true", help="only the first two candidates of each list")
    parser.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    args = parser.parse_args(argv)
    global DTYPE
    DTYPE = getattr(torch, args.dtype)
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.out, args.budget_s, args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
