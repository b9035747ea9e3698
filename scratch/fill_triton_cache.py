"""Fills Triton's on-disk cache, here, with the sm_90 kernels a config-probe jobs file launches on
the GPU, so that the GPU's probe finds them compiled instead of compiling them there (its warm-up
took 103-295 s of a device call). Each job's tuned config and variants (as `config_probe time`
normalizes them) are cross-compiled (build_tools/cross_compile.py) under TRITON_CACHE_DIR, with
Triton's cache key computed for the GPU's Triton: `--key-file` holds that machine's `triton_key()`
(scratch/triton_key.py --full writes it), which differs from this Python's where libtriton does
(another Python version's wheel). Writes OUT, the jobs less the variants that failed here.
  TRITON_CACHE_DIR=/tmp/hk_triton_cache python3 scratch/fill_triton_cache.py JOBS TABLE KEY_FILE OUT
The GPU must use the same TRITON_CACHE_DIR path: the cache's group files name absolute paths.
Whether the GPU hits is a hypothesis until a run shows it (scratch/triton_key.py there, and no new
cache entries after the probe)."""
import json
import os
import sys
import time
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tools")]

import triton.runtime.cache  # noqa: E402

import config_probe  # noqa: E402
from build_tools.cross_compile import CrossCompileError, cross_compile  # noqa: E402


def main(jobs_path: str, table_path: str, key_path: str, out_path: str) -> None:
    key = open(key_path).read()
    triton.runtime.cache.triton_key = lambda: key  # the GPU's Triton, whose cache keys start so
    raw = json.load(open(table_path))
    table = config_probe.with_siblings(Path(table_path), raw, {"arch": raw["arch"], "device_name": raw["device_name"]})
    kept = []
    for job in json.load(open(jobs_path)):
        start = time.time()
        spec = config_probe._spec(job["op"])
        args = config_probe.job_inputs(spec, job, "cpu")
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        notes = {}
        tuned = config_probe.tuned_config(config_probe._job_entry(table, job), job.get("dtypes", ""))
        configs = config_probe.normalized_variants(bound, job, tuned, notes)
        failed = []
        for label, config in configs.items():
            try:
                cross_compile(bound, args, config)
            except CrossCompileError as error:
                failed.append(label)
                print(f"   {label}: {str(error).splitlines()[0][:160]}", flush=True)
        variants = {label: job["variants"][label] for label in configs if label not in ("tuned", *failed)}
        if variants and "tuned" not in failed:
            kept.append({**job, "variants": variants})
        print(f"{config_probe.job_label(job)}: {len(configs)} configs, {len(failed)} failed, "
              f"{time.time() - start:.0f} s", flush=True)
    json.dump(kept, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:5])
