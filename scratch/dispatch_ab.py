"""Probe: one op's generated launchers as the runtime dispatches them on this GPU (the variant
`_dispatch` picks per shape), from the current generated module against the same variant of an
older module; inputs from the op's OpSpec, benchmarks.timing.Timer (CUDA events, L2 flushed),
alternating rounds, one process, outputs compared bit for bit.
    git show REV:helion_kernels/_generated/MODULE.py > scratch/old_MODULE_gen.py
    python3 scratch/dispatch_ab.py OP scratch/old_MODULE_gen.py OUT_DIR DTYPE:MxN [DTYPE:MxN ...]
Sixty-third session: softmax_fwd after the NaN-propagating max; sixty-fourth: rms_norm_bwd after
the balanced contiguous row runs."""
import importlib.util
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import Timer  # noqa: E402
from helion_kernels import _dispatch  # noqa: E402
from kernels_src import ALL_OPS  # noqa: E402


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def main(op: str, old_path: str, out_dir: Path, shapes: list[str]) -> None:
    spec = next(s for s in ALL_OPS if s.name == op)
    old_spec = importlib.util.spec_from_file_location("old_generated", old_path)
    old_module = importlib.util.module_from_spec(old_spec)
    old_spec.loader.exec_module(old_module)
    timer = Timer(torch.device("cuda"))
    rows = []
    for item in shapes:
        dtype_name, size = item.split(":")
        m, n = (int(v) for v in size.split("x"))
        dtype, shape = getattr(torch, dtype_name), {"M": m, "N": n}
        launcher = _dispatch.DISPATCHER.resolve(op, torch.device("cuda"), dtype, shape).launcher
        name = launcher.__name__
        if not hasattr(old_module, name):
            print(f"{item}: {name} not in the old module", flush=True)
            continue
        args = spec.make_inputs(shape, dtype, "cuda", 0)
        fns = {"old": lambda f=getattr(old_module, name): f(*args), "new": lambda f=launcher: f(*args)}
        same = all(torch.equal(a, b) for a, b in zip(_outputs(fns["old"]()), _outputs(fns["new"]())))
        times = timer.device_rounds(fns, rounds=9)
        med = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
        row = {"op": op, "dtype": dtype_name, "shape": [m, n], "variant": name, "old_us": med["old"],
               "new_us": med["new"], "new_over_old_speed": med["old"] / med["new"], "identical": same}
        rows.append(row)
        print(f"{item}: old {med['old']:.1f} new {med['new']:.1f} us, speed {row['new_over_old_speed']:.3f}x, "
              f"identical {same}", flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{op}_dispatch_ab.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:])
