"""Probe (GPU): row kernels on a persistent grid whose tile loop is software-pipelined.

Triton 3.6 pipelines the loads of a loop without a dot only when the loop carries an explicit
`num_stages` (the kernel-wide option leaves them unpipelined: cross-compiled, one TMA load and no
shared-memory ring). The DSL's persistent tile loop carries none, so a persistent row kernel loads
its next row only after this one's reductions. Here each variant's generated module gets
`num_stages=S` on its `virtual_pid` loop (a hand patch, for measurement only), and is timed against
the table's config in alternating rounds (the report's timer), outputs compared with the tuned one's.

    python3 scratch/persistent_row_stages_probe.py [--table T] [--rounds 7] --out DIR
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import kernels_src  # noqa: E402
from benchmarks.timing import Timer  # noqa: E402
from build_tools.dsl import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402

P = "persistent_interleaved"


def desc(n):
    return {"indexing": ["tensor_descriptor"] * n}


def variants(sites: int, warps: tuple) -> dict:
    out = {}
    for w in warps:
        for s in (2, 3):
            out[f"persistent td w{w} s{s}"] = ({"pid_type": P, "num_warps": w, **desc(sites)}, s)
        out[f"persistent ptr w{w} s3"] = ({"pid_type": P, "num_warps": w}, 3)
        out[f"persistent td w{w} unpatched"] = ({"pid_type": P, "num_warps": w, **desc(sites)}, None)
    return out


JOBS = [
    ("softmax_fwd", (16384, 16384), variants(10, (16, 32))),
    ("softmax_fwd", (4096, 16384), variants(10, (16, 32))),
    ("softmax_fwd", (16384, 8192), variants(10, (8, 16))),
    ("softmax_fwd", (16384, 4096), variants(10, (8, 16))),
    ("rms_norm_fwd", (16384, 16384), variants(6, (16, 32))),
    ("rms_norm_fwd", (16384, 8192), {**variants(6, (8, 16)), **{
        f"persistent td w16 s{s} whole row": ({"pid_type": P, "num_warps": 16, "reduction_loops": [None], **desc(6)}, s)
        for s in (2, 3)}}),
    ("rms_norm_fwd", (16384, 4096), variants(6, (8, 16))),
]


def patched(source: str, stages: int | None) -> str:
    if stages is None:
        return source
    out, count = re.subn(r"(for virtual_pid in tl\.range\([^\n]*?)\):", rf"\1, num_stages={stages}):", source)
    assert count, "no persistent loop"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", default="tuned_configs/sm_90.json")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    table = json.loads(Path(options.table).read_text())
    sibling = Path(options.table).parent / "sm_90-nvidia-h100-80gb-hbm3.json"
    device_name = torch.cuda.get_device_name()
    entries = {(e["op"], e["dtype"], json.dumps(e["shape"])): e for e in table["entries"]}
    if "H100" in device_name and sibling.exists():
        entries.update({(e["op"], e["dtype"], json.dumps(e["shape"])): e for e in json.loads(sibling.read_text())["entries"]})
    timer = Timer(torch.device("cuda"))
    results = []
    for op, (m, n), job in JOBS:
        spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
        shape = {"M": m, "N": n}
        entry = entries[(op, "bfloat16", json.dumps(shape))]
        args = spec.make_inputs(shape, torch.bfloat16, "cuda", 0)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        rtol, atol = spec.tolerance(torch.bfloat16)
        fns, notes, reference = {}, {}, None
        for label, (overrides, stages) in {"tuned": ({}, None), **job}.items():
            try:
                config = bound.config_spec.normalize(Config({**entry["config"], **overrides}))
                module = load_module(patched(bound.to_triton_code(config), stages))
                fn = getattr(module, spec.kernel.name)
                outputs = fn(*args)
                outputs = [t for t in (outputs if isinstance(outputs, tuple) else (outputs,)) if isinstance(t, torch.Tensor)]
                torch.cuda.synchronize()
            except Exception as error:
                notes[label] = f"failed: {type(error).__name__}: {str(error)[-300:]}"
                continue
            if reference is None:
                reference = [t.clone() for t in outputs]
            elif not all(torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol) for a, b in zip(outputs, reference)):
                notes[label] = "outputs differ from the tuned config's"
                continue
            fns[label] = (lambda f: lambda: f(*args))(fn)
        times = timer.device_rounds(fns, rounds=options.rounds)
        best = {label: statistics.median(t) for label, t in times.items()}
        print(op, shape, device_name, flush=True)
        for label, us in sorted(best.items(), key=lambda item: item[1]):
            print(f"   {label:40s} {us:10.2f} us  {best['tuned'] / us:6.3f}x", flush=True)
        for label, note in notes.items():
            print(f"   {label:40s} {note}", flush=True)
        results.append({"op": op, "shape": shape, "device": device_name, "median_us": best, "notes": notes})
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "persistent_row_stages_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
