"""Per-kernel CUDA times (torch.profiler) of attention_bwd under table configs with overrides:
which of the two kernels (dq, then dk/dv) a config change moves. Jobs as the config probe's
([{"dtype", "shape", "variants": {label: overrides}}], entries of tuned_configs/sm_90.json);
each variant's outputs must match the tuned config's within the op's tolerance.

    python3 scratch/bwd_variant_kernel_split.py JOBS.json   (on a GPU)
"""
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from tools.config_probe import _entry, _spec, _tensors  # noqa: E402

REPS = 10


def kernel_times(fn) -> list:
    """[(kernel name, µs)] of one call of `fn`, in launch order, each the mean over REPS calls
    (kernels under 1 µs left out)."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                     key=lambda e: e.time_range.start)
    per_call = len(kernels) // REPS
    means = [(kernels[i].name[:70], sum(k.device_time for k in kernels[i::per_call]) / REPS) for i in range(per_call)]
    return [(name, round(us, 1)) for name, us in means if us > 1]


def main() -> None:
    table = json.load(open("tuned_configs/sm_90.json"))
    spec = _spec("attention_bwd")
    for job in json.load(open(sys.argv[1])):
        dtype = getattr(torch, job["dtype"])
        entry = _entry(table, "attention_bwd", job["dtype"], job.get("from_shape", job["shape"]))
        args = spec.make_inputs(job["shape"], dtype, "cuda", 0)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        rtol, atol = spec.tolerance(dtype)
        reference = None
        print(job["dtype"], json.dumps(job["shape"]), flush=True)
        for label, overrides in {"tuned": {}, **job["variants"]}.items():
            try:
                fn = bound.compile_config(bound.config_spec.normalize(Config({**entry["config"], **overrides})))
                outputs = _tensors(fn(*args))
            except Exception as error:  # one variant's compile or launch failure
                print(f"   {label:36s} failed: {type(error).__name__}: {str(error)[-200:]}", flush=True)
                continue
            if reference is None:
                reference = outputs
            elif not all(torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol) for a, b in zip(outputs, reference)):
                print(f"   {label:36s} outputs differ from the tuned config's", flush=True)
                continue
            times = kernel_times(lambda: fn(*args))
            print(f"   {label:36s} total {sum(t for _, t in times):9.1f} us  " +
                  "  ".join(f"{t:9.1f}" for _, t in times), flush=True)


if __name__ == "__main__":
    main()
