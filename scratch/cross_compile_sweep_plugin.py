"""A pytest plugin that cross-compiles the DSL corpus for sm_90 instead of running it: Triton's
interpreter accepts forms its GPU compiler rejects (a unit batch dim in tl.dot, a reshape of a
scalar load), which the CPU suite cannot see. Not a test mode: every corpus kernel's run is
replaced by a compile, and the compile errors are written to SWEEP_OUT (JSON lines).

    TRITON_INTERPRET=0 SWEEP_OUT=/tmp/sweep.jsonl HK_DSL_RANDOM_CONFIGS=0 \
      python -m pytest -q -p scratch.cross_compile_sweep_plugin tests/dsl
"""
from __future__ import annotations

import json
import os
import sys

from build_tools.cross_compile import cross_compile

# pytest imports tests/dsl as the package `dsl` (tests/ has no __init__.py): patch that module
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import dsl._harness as harness  # noqa: E402


def _compile_only(kernel, args, reference, *, poison=(), n_random=None, seed_offset=None, extra_configs=(),
                  overrides=(), **_ignored):
    bound = kernel.bind(tuple(args))
    n_random = harness.RANDOM_CONFIGS if n_random is None else n_random
    seed_offset = harness.SEED_OFFSET if seed_offset is None else seed_offset
    ran = []
    for label, config in harness.configs_to_run(bound, n_random, seed_offset, extra_configs, overrides):
        try:
            cross_compile(bound, harness.fresh_args(args, poison), config)
        except Exception as err:  # every failure is the sweep's finding, whatever its type
            with open(os.environ["SWEEP_OUT"], "a") as out:
                out.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", ""), "kernel": kernel.name,
                                      "config": label, "error": f"{type(err).__name__}: {str(err)[-600:]}"}) + "\n")
        ran.append(config)
    return ran


harness.check_kernel = _compile_only
