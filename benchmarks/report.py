"""`python -m benchmarks.report --out DIR`: time every op against its peers and write DIR/RESULTS.md,
DIR/results.json, DIR/bandwidth.png and DIR/attention.png. `--tiny` runs the same pipeline on tiny
CPU shapes under the Triton interpreter (a dry run of every code path that needs no GPU); `--only`
keeps some rows (plan.select)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="output folder (at most 4 files, no subfolders)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="seconds after which the remaining rows are marked 'not run (budget)'")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on CPU with TRITON_INTERPRET=1")
    parser.add_argument("--missed", default="MISSED.md",
                        help="where RESULTS.md links for the analysis of its misses, relative to the folder "
                             "it is committed to (benchmarks/h200/RESULTS.md: ../MISSED.md)")
    parser.add_argument("--only", action="append", metavar="OP[:KEY=VALUE,...]",
                        help="run only these rows (repeatable), e.g. rmsnorm_bwd:M=1,N=4096 or attention_bwd:causal=true; "
                             "for the rows a change touched, timed with their peers in one process")
    args = parser.parse_args(argv)
    if args.tiny:
        os.environ["TRITON_INTERPRET"] = "1"   # before torch/triton/helion_kernels are imported
    import torch

    from . import plan, runner
    if args.only:
        try:
            plan.select(plan.build(args.tiny), args.only)
        except ValueError as error:
            parser.error(str(error))
    device = torch.device("cpu" if args.tiny else "cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device: use --tiny for the CPU dry run")
    runner.run(args.out, device, args.budget_s, args.tiny, args.missed, args.only)


if __name__ == "__main__":
    main()
