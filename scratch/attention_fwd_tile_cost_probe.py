"""Probe: where a causal Gluon forward's per-tile time goes (H100), by timing its generated module
edited, in one process (benchmarks.timing.Timer rounds, L2 flushed). Edits that change results
measure a part's cost only.

    python3 scratch/attention_fwd_tile_cost_probe.py OUT_DIR

Variants of the module the runtime's table entry compiles to, per shape:
- "shipped": as generated (the unmasked key tiles, then the diagonal tiles in a second loop);
- "one loop": the unmasked loop runs to the query tile's end and the diagonal loop is empty (the
  same dots, one pipeline per tile, no causal mask: wrong results);
- "no diagonal": the diagonal loop is empty (one key tile less per query tile);
- "no output store": the output tile's TMA store is left out.
"""
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import Timer  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402
from kernels_src.attention import attention_fwd, cost_fwd, make_fwd_inputs  # noqa: E402

SHAPES = [{"B": 4, "H": 32, "Hkv": 32, "Sq": s, "Sk": s, "D": d, "causal": True}
          for d, s in ((128, 1024), (128, 4096), (64, 1024), (64, 2048))]
UNMASKED_END = re.compile(r"(\w+) = gl\.minimum\((offset_\d+), kv_len\)")
MASKED_END = re.compile(r"(\w+) = gl\.minimum\((end_\d+), kv_len\)")
OUT_STORE = re.compile(r"\n\s*tma\.async_copy_shared_to_global\(out_desc_\d+,[^\n]*")


def edited(source: str, variant: str) -> str:
    if variant == "shipped":
        return source
    if variant == "no output store":
        return OUT_STORE.sub("", source)
    unmasked = UNMASKED_END.search(source).group(1)
    if variant == "one loop":
        return UNMASKED_END.sub(lambda m: f"{m.group(1)} = gl.minimum(gl.minimum({m.group(2)} + _BLOCK_SIZE_0, q_len), kv_len)",
                                source)
    if variant == "no diagonal":
        return MASKED_END.sub(lambda m: f"{m.group(1)} = {unmasked}", source)
    raise ValueError(variant)


def main() -> None:
    out_dir = Path(sys.argv[1])
    timer = Timer(torch.device("cuda", 0))
    results = []
    for shape in SHAPES:
        args = make_fwd_inputs(shape, torch.bfloat16, "cuda", 0)
        config = DISPATCHER.resolve("attention_fwd", torch.device("cuda"), torch.bfloat16, shape).config
        bound = attention_fwd.bind(args)
        source = bound.to_triton_code(bound.config_spec.normalize(Config(config)))
        fns, notes = {}, {}
        for variant in ("shipped", "one loop", "no diagonal", "no output store"):
            try:
                fn = getattr(load_module(edited(source, variant)), "attention_fwd")
                fn(*args)
                fns[variant] = (lambda f: lambda: f(*args))(fn)
            except Exception as error:  # noqa: BLE001 - reported per variant
                notes[variant] = f"{type(error).__name__}: {str(error)[-300:]}"
        times = {label: statistics.median(runs) for label, runs in timer.device_rounds(fns, rounds=5).items()}
        flops = cost_fwd(shape, torch.bfloat16)[0]
        row = {"shape": shape, "config": {k: config.get(k) for k in ("backend", "block_sizes", "consumer_groups", "num_stages",
                                                                       "maxnreg", "pid_type")},
               "us": times, "notes": notes}
        print(json.dumps(shape), row["config"], flush=True)
        for label, us in times.items():
            print(f"   {label:20s} {us:9.1f} us  {flops / us / 1e6:6.0f} TFLOP/s  {times['shipped'] / us:.3f}x", flush=True)
        for label, note in notes.items():
            print(f"   {label:20s} {note}", flush=True)
        results.append(row)
        (out_dir / "tile_cost_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
