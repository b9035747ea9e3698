"""Some rows of the report (benchmarks.report), timed the same way, with their peers in one process:
python3 scratch/report_rows.py '[["rmsnorm_bwd", {"M": 1, "N": 4096}], ...]' > rows.txt
(rows that changed after the last full report; the report's mode "device" rows only)."""
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import plan, runner  # noqa: E402
from benchmarks.timing import Timer  # noqa: E402


def main():
    wanted = [(op, shape) for op, shape in json.loads(sys.argv[1])]
    timer = Timer(torch.device("cuda"))
    budget = runner.Budget(float(sys.argv[2]) if len(sys.argv) > 2 else 300.0)
    for row in plan.build():
        if row.kind != "case" or row.mode != "device" or (row.op, row.shape) not in wanted:
            continue
        records = runner._case_records(row, budget, timer, {})
        ours = next((r.get("us") for r in records if r["impl"] == "ours"), None)
        for record in records:
            us = record.get("us")
            ratio = f"{us / ours:.3f}x" if us and ours else ""
            print(f"{row.op} {json.dumps(row.shape)} {record['impl']:10s} {us if us is None else round(us, 2)} us {ratio} "
                  f"{'' if us else record.get('status', '')}", flush=True)


if __name__ == "__main__":
    main()
