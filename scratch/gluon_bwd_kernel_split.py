"""Per-kernel CUDA times (torch.profiler) of the attention backward's two kernels, dq and dk/dv,
under the table's config and under the Gluon back end (32- and 64-query tiles of dk/dv, its P and dS
in registers or in shared memory: `shared_operands`), at D128 report shapes (bf16).

    python3 scratch/gluon_bwd_kernel_split.py   (on a Hopper GPU)
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from kernels_src.attention import attention_bwd, make_bwd_inputs  # noqa: E402
from tools.config_probe import _device_header, _entry, with_siblings  # noqa: E402

TABLE = Path("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json")


def gluon(causal: bool, stages: int, queries: int = 32, shared: bool = False) -> dict:
    return {"backend": "gluon", "consumer_groups": 2, "block_sizes": [128, 64, 128, queries], "num_stages": stages,
            "range_peel_tails": [False] * (5 if causal else 3), "shared_operands": shared}


def roles(source: str) -> dict:
    """Kernel name -> "dk/dv" or "dq", by whether its signature takes grad_k."""
    import re
    return {m.group(1): "dk/dv" if "grad_k" in m.group(2) else "dq"
            for m in re.finditer(r"def (_attention_bwd_\w+?)\((.*)\)", source) if not m.group(1).endswith(("_loader", "_consumer"))}


def kernel_times(fn, args, reps: int = 10) -> dict:
    fn(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(*args)
        torch.cuda.synchronize()
    times = {}
    for event in prof.key_averages():
        if event.device_type == torch.autograd.DeviceType.CUDA and "attention_bwd" in event.key:
            times[event.key[:60]] = round(event.device_time_total / reps, 1)
    return times


def main() -> None:
    table = with_siblings(TABLE, json.loads(TABLE.read_text()), _device_header())
    for causal in (False, True):
        shape = {"B": 4, "H": 32, "Hkv": 32, "Sq": 4096, "Sk": 4096, "D": 128, "causal": causal}
        args = make_bwd_inputs(shape, torch.bfloat16, "cuda", 0)
        entry = _entry(table, "attention_bwd", "bfloat16", shape)
        bound = attention_bwd.bind(args)
        variants = [("tuned", entry["config"])] + [
            (f"gluon, {queries} queries, {stages} stages, shared {shared}", {**entry["config"], **gluon(causal, stages, queries, shared)})
            for queries, shared in ((32, False), (64, True)) for stages in (3, 4)]
        for label, config in variants:
            config = bound.config_spec.normalize(Config(config))
            names = roles(bound.to_triton_code(config))
            fn = bound.compile_config(config)
            times = {names.get(k, k): v for k, v in kernel_times(fn, args).items()}
            print(f"causal={causal} {label}: {times} (us per call)", flush=True)


if __name__ == "__main__":
    main()
