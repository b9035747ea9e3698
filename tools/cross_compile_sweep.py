"""Cross-compiles, for sm_90, every DSL kernel variant a test run executes, and reports compiler failures.

    python tools/cross_compile_sweep.py [--workers N] [--out DIR] [PYTEST ARGS...]   (default: tests/dsl)

Phase 1 runs the tests as usual (Triton interpreter on CPU) with this file loaded as a pytest plugin:
each config a DSL kernel is compiled for and called with is recorded once (generated source, host
function, CPU arguments). Phase 2, in processes without TRITON_INTERPRET, cross-compiles each record
(build_tools/cross_compile.py) and writes DIR/report.txt. More random configs per corpus test:
HK_DSL_RANDOM_CONFIGS=6. Test failures of phase 1 are reported but do not stop the sweep.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOBS_ENV = "HK_CROSS_COMPILE_JOBS"


# ---------------------------------------------------------------------- phase 1: pytest plugin
def pytest_configure(config):
    """Wraps BoundKernel.compile_config so that every call of a compiled variant is recorded."""
    import torch

    from build_tools.dsl.kernel import BoundKernel

    directory = os.environ[JOBS_ENV]
    original = BoundKernel.compile_config
    wrappers: dict = {}  # one wrapper per compiled variant, so cache-identity tests still hold

    def recording_compile_config(self, config=None):
        fn = original(self, config)
        if fn in wrappers:
            return wrappers[fn]
        source = self.to_triton_code(config)

        def run(*args, **kwargs):
            signature = repr([(tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else a for a in args])
            digest = hashlib.sha1((source + signature + repr(sorted(kwargs))).encode()).hexdigest()[:20]
            path = os.path.join(directory, digest + ".pt")
            if not os.path.exists(path):
                job = {"source": source, "host_fn": self.kernel.name, "args": list(args), "kwargs": kwargs,
                       "test": os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]}
                torch.save(job, path + f".{os.getpid()}")
                os.replace(path + f".{os.getpid()}", path)
            return fn(*args, **kwargs)

        wrappers[fn] = run
        return run

    BoundKernel.compile_config = recording_compile_config


# ---------------------------------------------------------------------- phase 2: cross-compile
def compile_job(path: str) -> tuple[str, str, str, str | None]:
    """(test, kernel, config line, failure or None) for one recorded job."""
    import torch

    from build_tools.cross_compile import cross_compile_source

    job = torch.load(path, weights_only=False)
    config = next((line for line in job["source"].splitlines() if line.startswith("config: ")), "config: ?")
    try:
        cross_compile_source(job["source"], job["host_fn"], job["args"], job["kwargs"])
    except Exception as err:  # every failure is reported, whatever raised it
        return job["test"], job["host_fn"], config, f"{type(err).__name__}: {err}"
    return job["test"], job["host_fn"], config, None


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=".out/cross_compile_sweep")
    options, pytest_args = parser.parse_known_args(argv)
    jobs_dir = os.path.abspath(os.path.join(options.out, "jobs"))
    os.makedirs(jobs_dir, exist_ok=True)
    env = {**os.environ, JOBS_ENV: jobs_dir, "HK_TEST_DEVICE": "cpu", "TRITON_INTERPRET": "1",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), ROOT, os.environ.get("PYTHONPATH", "")])}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "cross_compile_sweep", "-n", str(options.workers),
                            "-p", "no:cacheprovider", *(pytest_args or ["tests/dsl"])], cwd=ROOT, env=env)
    paths = sorted(os.path.join(jobs_dir, name) for name in os.listdir(jobs_dir) if name.endswith(".pt"))
    os.environ["TRITON_INTERPRET"] = "0"
    with concurrent.futures.ProcessPoolExecutor(options.workers) as pool:
        results = list(pool.map(compile_job, paths, chunksize=8))
    failures = [r for r in results if r[3] is not None]
    lines = [f"{len(results)} kernel variants cross-compiled for sm_90, {len(failures)} failed"
             f" (pytest exit status {tests.returncode})"]
    for test, kernel, config, error in failures:
        lines += [f"\n== {test} :: {kernel}", config, error]
    report = "\n".join(lines)
    with open(os.path.join(options.out, "report.txt"), "w") as fh:
        fh.write(report + "\n")
    print(report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main(sys.argv[1:]))
