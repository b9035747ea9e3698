"""pytest-benchmark suite of the DESIGN.md peer rows (GPU only):
`python -m pytest benchmarks/test_bench.py -m gpu` (grouped per case).

Each test times one implementation on one case with pytest-benchmark's own timer (a synchronize
ends every round); the report script (`python -m benchmarks.report`) is the flushed-L2, CUDA-event
measurement that RESULTS.md comes from."""
from __future__ import annotations

import pytest
import torch

from . import impls, measure, plan

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU benchmarks need CUDA")]

PEER_ROWS = [r for r in plan.build() if r.kind == "case"][:8]
CASES = [(row, impl) for row in PEER_ROWS for impl in row.impls]


def _case_id(case) -> str:
    row, impl = case
    return f"{row.op}-{'x'.join(str(v) for v in row.shape.values())}-{row.mode}-{impl}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_bench(benchmark, case):
    row, impl = case
    args = measure.make_inputs(row, torch.bfloat16, torch.device("cuda"))
    try:
        fn, _ = measure.timed_call(row, impl, args)
    except impls.NotInstalled as error:
        pytest.skip(str(error))

    def call():
        fn()
        torch.cuda.synchronize()

    benchmark.group = f"{row.op} {row.shape} {row.mode}"
    benchmark(call)
