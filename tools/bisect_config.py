"""Finds which knobs of a config make an op's output wrong: runs the op under the config, then under
variants with one knob (and, for per-index knobs, one entry) reset to the default config's value,
and compares every output with the op's float64 reference at the op's tolerance.

    python tools/bisect_config.py kernels_src.rms_norm:rms_norm_bwd --shape M=4096,N=768 \\
        --dtype bfloat16 --config '{"block_sizes": [4, 512], ...}' [--device cuda] [--out FILE]

A variant that passes while the config fails names a knob the failure needs. Prints one line per
run (also appended to --out). With `--jobs N` every variant runs in a fresh process (N at a time),
so an illegal memory access, which poisons its process's CUDA context, spoils only its own line.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from build_tools.dsl import Config  # noqa: E402


def find_op(target: str):
    module_name, _, op_name = target.partition(":")
    module = importlib.import_module(module_name)
    (op,) = [op for op in module.OPS if op.name == op_name]
    return op


def mismatch(outputs, references, tolerance) -> str:
    """'' when every output is within (rtol, atol) of its reference, else a summary per bad output."""
    rtol, atol = tolerance
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    references = references if isinstance(references, (tuple, list)) else (references,)
    bad = []
    for index, (got, want) in enumerate(zip(outputs, references)):
        got, want = got.to(torch.float64), want.to(got.device, torch.float64)
        error = (got - want).abs()
        off = ~(error <= atol + rtol * want.abs())
        if off.any():
            bad.append(f"out[{index}]: {int(off.sum())}/{off.numel()} off, max abs error {error.max().item():.3g}")
    return "; ".join(bad)


def variants(spec, config: Config) -> list[tuple[str, Config]]:
    """(label, config) for the config itself, then each knob and each knob entry reset to its default."""
    values, defaults = spec.flatten(config), spec.flatten(spec.default_config())
    out = [("as given", spec.unflatten(values))]
    names = []
    for knob in spec.knobs():
        if knob.name not in names:
            names.append(knob.name)
    for name in names:
        positions = [i for i, knob in enumerate(spec.knobs()) if knob.name == name]
        if all(values[i] == defaults[i] for i in positions):
            continue
        whole = list(values)
        for i in positions:
            whole[i] = defaults[i]
        out.append((f"{name} = default", spec.unflatten(whole)))
        if len(positions) > 1:
            for i in positions:
                if values[i] != defaults[i]:
                    one = list(values)
                    one[i] = defaults[i]
                    out.append((f"{name}[{spec.knobs()[i].index}] = {defaults[i]!r}", spec.unflatten(one)))
    return out


def verdict(bound, config, args, references, tolerance) -> str:
    """'ok', the outputs' mismatch, or the error compiling or running the config raised."""
    try:
        return mismatch(bound.compile_config(config)(*args), references, tolerance) or "ok"
    except Exception as err:  # report every variant, whatever compiling or running raised
        return f"error {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"


def in_processes(argv: list, count: int, jobs: int) -> list[str]:
    """Each variant's report line from a fresh `--only i` process of this script, `jobs` at once."""
    from concurrent.futures import ThreadPoolExecutor
    import subprocess

    base, skip = [], False
    for arg in argv:  # the child reports to its parent only: drop --out and --jobs with their values
        if skip or arg.split("=")[0] in ("--out", "--jobs"):
            skip = not skip and "=" not in arg
            continue
        base.append(arg)

    def one(index: int) -> str:
        done = subprocess.run([sys.executable, os.path.abspath(__file__), *base, "--only", str(index)],
                              capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line and not line.startswith("==")]
        return lines[-1] if lines else f"variant {index:<32d} error: process exited {done.returncode}"

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, range(count)))


def shape_value(text: str):
    """A shape key's value: an int, a float, or True/False (attention's `causal`)."""
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        return float(text)


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("op", help="module:op name, e.g. kernels_src.rms_norm:rms_norm_bwd")
    parser.add_argument("--shape", required=True, help="e.g. M=4096,N=768")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--config", required=True, help="JSON config")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="file to append the report to")
    parser.add_argument("--jobs", type=int, default=0, help="run each variant in its own process, this many at once")
    parser.add_argument("--only", type=int, default=None, help=argparse.SUPPRESS)  # one variant (a --jobs child)
    options = parser.parse_args(argv)
    op = find_op(options.op)
    shape = {k: shape_value(v) for k, v in (item.split("=") for item in options.shape.split(","))}
    dtype = getattr(torch, options.dtype)
    args = op.make_inputs(shape, dtype, options.device, options.seed)
    references = op.reference(*args)
    op.kernel.reset()
    bound = op.kernel.bind(args)
    lines = [f"== {op.name} {shape} {options.dtype} {options.config}"]
    print(lines[0], flush=True)
    failed = 0
    runs = variants(bound.config_spec, Config(json.loads(options.config)))
    if options.only is not None:
        runs = [runs[options.only]]
    if options.jobs:
        results = in_processes(argv, len(runs), options.jobs)
    else:
        results = (f"{label:40s} {verdict(bound, config, args, references, op.tolerance(dtype))}" for label, config in runs)
    for line in results:
        failed += not line.endswith(" ok")
        lines.append(line)
        print(line, flush=True)
    if options.only is not None:
        return 1 if failed else 0
    if options.out:
        with open(options.out, "a") as fh:
            fh.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
