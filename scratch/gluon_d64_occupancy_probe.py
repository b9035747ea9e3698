"""Probe: the Gluon attention forward at D64 with several CTAs per SM (a register cap `maxnreg` at
compile time, the consumers' setmaxnreg lowered to fit), against the table's Triton entry and SDPA's
cuDNN forward, in one process.

    python3 scratch/gluon_d64_occupancy_probe.py OUT_DIR   (on a Hopper GPU)

Each variant: (consumer groups, key tile, stages, maxnreg or None, consumer registers). The
launcher's `_launch` is replaced in the generated module so that the Gluon kernel compiles with
`maxnreg`; CONSUMER_REGS (the last constexpr) is replaced where given. Prints time, TFLOP/s, ratio
to cuDNN, registers, spills and shared memory; writes d64_occupancy.json under OUT_DIR.
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from kernels_src.attention import attention_fwd, cost_fwd, make_fwd_inputs  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402



def table_config(op: str, shape: dict) -> dict:
    """The config the runtime's dispatcher picks on this GPU for a bf16 call of `shape`."""
    return DISPATCHER.resolve(op, torch.device("cuda"), torch.bfloat16, shape).config
VARIANTS = [(1, 64, 3, None, None), (1, 64, 3, 128, None), (1, 64, 3, 80, None), (1, 64, 2, 80, None),
            (2, 64, 3, 80, 104), (2, 64, 2, 80, 104), (2, 128, 2, None, None), (1, 128, 2, 128, None)]
SHAPES = [{"B": 4, "H": 32, "Hkv": 32, "Sq": s, "Sk": s, "D": 64, "causal": c} for c in (False, True) for s in (1024, 4096)]


def bench(fn) -> float:
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def cudnn_ms(args) -> float:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v, causal, scale = args
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale))


def variant_fn(bound, config: dict, maxnreg, regs):
    source = bound.to_triton_code(bound.config_spec.normalize(Config(config)))
    module = load_module(source + f"\n# probe variant maxnreg={maxnreg} regs={regs}\n")
    compiled = {}

    def launch(kernel, grid, args, constants, num_warps, num_stages):
        if regs is not None:
            constants = (*constants[:-1], regs)
        extra = {"maxnreg": maxnreg} if maxnreg else {}
        compiled["kernel"] = kernel[grid](*args, *constants, num_warps=num_warps, num_stages=num_stages, **extra)

    module._launch = launch
    return getattr(module, "attention_fwd"), compiled


def main() -> None:
    out_dir = Path(sys.argv[1])
    results = []
    for shape in SHAPES:
        args = make_fwd_inputs(shape, torch.bfloat16, "cuda", 0)
        flops = cost_fwd(shape, torch.bfloat16)[0]
        tuned = table_config("attention_fwd", shape)
        bound = attention_fwd.bind(args)
        shipped = bound.compile_config(bound.config_spec.normalize(Config(tuned)))
        want = shipped(*args)[0]
        row = {"shape": shape, "shipped_ms": bench(lambda: shipped(*args)), "cudnn_ms": cudnn_ms(args), "variants": []}
        print(f"{shape}: shipped {row['shipped_ms'] * 1e3:.1f} us ({row['cudnn_ms'] / row['shipped_ms']:.3f}x cuDNN), "
              f"cuDNN {row['cudnn_ms'] * 1e3:.1f} us", flush=True)
        for groups, keys, stages, maxnreg, regs in VARIANTS:
            config = {**tuned, "backend": "gluon", "consumer_groups": groups, "block_sizes": [64 * groups, keys],
                      "num_stages": stages, "pid_type": "flat"}
            item = {"groups": groups, "keys": keys, "stages": stages, "maxnreg": maxnreg, "regs": regs}
            try:
                fn, compiled = variant_fn(bound, config, maxnreg, regs)
                got = fn(*args)[0]
                item["max_diff_vs_shipped"] = float((got.float() - want.float()).abs().max())
                item["ms"] = bench(lambda: fn(*args))
                kernel = compiled["kernel"]
                item.update(n_regs=kernel.n_regs, n_spills=kernel.n_spills, shared_kib=kernel.metadata.shared // 1024)
                print(f"  {item}: {item['ms'] * 1e3:.1f} us, {flops / item['ms'] / 1e9:.0f} TFLOP/s, "
                      f"{row['cudnn_ms'] / item['ms']:.3f}x cuDNN, {row['shipped_ms'] / item['ms']:.3f}x shipped", flush=True)
            except Exception as error:  # noqa: BLE001 - reported per variant
                item["error"] = f"{type(error).__name__}: {str(error)[-500:]}"
                print(f"  {item}", flush=True)
            row["variants"].append(item)
        results.append(row)
        (out_dir / "d64_occupancy.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
