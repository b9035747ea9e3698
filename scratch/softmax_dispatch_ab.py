"""Probe: the shipped softmax forward as the runtime dispatches it (the variant `_dispatch` picks on
this GPU) from the current generated module against the same variant of an older module, at the
benchmark suite's bf16 shapes and the long float32 rows; generated functions called directly,
benchmarks.timing.Timer (CUDA events, L2 flushed), alternating rounds, one process, outputs compared.
The sixty-third session: float max reductions became tl.reduce with a NaN-propagating combine.
    git show 717cf54:helion_kernels/_generated/softmax.py > scratch/old_softmax_gen.py
    python3 scratch/softmax_dispatch_ab.py OUT_DIR"""
import importlib.util
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import Timer  # noqa: E402
from helion_kernels import _dispatch  # noqa: E402
from helion_kernels._generated import softmax as new_module  # noqa: E402

SHAPES = [("bfloat16", m, n) for m, n in [(16384, 1024), (16384, 2048), (16384, 4096), (16384, 8192), (16384, 16384),
                                          (4096, 16384), (2048, 16384), (65536, 4096), (4096, 131072), (256, 262144)]]
SHAPES += [("float32", 4096, 131072), ("float32", 16384, 4096)]


def main(out_dir: Path) -> None:
    spec = importlib.util.spec_from_file_location("old_softmax", "scratch/old_softmax_gen.py")
    old_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old_module)
    timer = Timer(torch.device("cuda"))
    rows = []
    for dtype_name, m, n in SHAPES:
        dtype = getattr(torch, dtype_name)
        decision = _dispatch.DISPATCHER.resolve("softmax_fwd", torch.device("cuda"), dtype, {"M": m, "N": n})
        name = decision.launcher.__name__
        if not hasattr(old_module, name):
            print(f"{dtype_name} {m}x{n}: {name} not in the old module", flush=True)
            continue
        x = torch.randn(m, n, device="cuda", dtype=dtype) * 3
        fns = {"old": lambda f=getattr(old_module, name): f(x, dtype), "new": lambda f=getattr(new_module, name): f(x, dtype)}
        same = torch.equal(fns["old"](), fns["new"]())
        times = timer.device_rounds(fns, rounds=9)
        med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
        row = {"dtype": dtype_name, "shape": [m, n], "variant": name, "old_us": med["old"], "new_us": med["new"],
               "new_over_old_speed": med["old"] / med["new"], "identical": same}
        rows.append(row)
        print(f"{dtype_name} {m}x{n}: old {med['old']:.1f} new {med['new']:.1f} us, speed {row['new_over_old_speed']:.3f}x, "
              f"identical {same}", flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "softmax_dispatch_ab.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
