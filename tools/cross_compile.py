"""Cross-compiles a DSL kernel's generated Triton for an sm_90 GPU on a machine without one.

    python tools/cross_compile.py tests.dsl.test_compat:softmax_two_pass "(torch.randn(20, 300),)" \\
        [--config default] [--config random:0-5] [--config '{"block_sizes": [1, 2]}'] [--ptxas] [--dump DIR]

ARGS is a Python expression (torch is in scope) giving the argument tuple (CPU tensors). Each
--config is `default`, `random:N` or `random:A-B` (seeds of `config_spec.random_config`), or a JSON
config. Prints, per config and launched kernel, `ok` (with ptxas registers/spills and wgmma/TMA use under
--ptxas) or
the compiler's failure; --dump writes each kernel's ttgir and ptx. Exit status 1 if any failed.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from build_tools.cross_compile import cross_compile  # noqa: E402
from build_tools.dsl import Config  # noqa: E402


def configs_from(specs: list, config_spec) -> list:
    out = []
    for spec in specs or ["default"]:
        if spec == "default":
            out.append(("default", config_spec.default_config()))
        elif spec.startswith("random:"):
            first, _, last = spec[len("random:"):].partition("-")
            for seed in range(int(first), int(last or first) + 1):
                out.append((f"random{seed}", config_spec.random_config(seed)))
        else:
            out.append(("json", Config(json.loads(spec))))
    return out


def failure_summary(err: Exception) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: " + "\n    ".join(line[:300] for line in lines[:4])


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernel", help="module:kernel, e.g. tests.dsl.test_compat:softmax_two_pass")
    parser.add_argument("args", help="Python expression for the argument tuple")
    parser.add_argument("--config", action="append", help="default | random:N | random:A-B | JSON")
    parser.add_argument("--ptxas", action="store_true",
                        help="print registers, spills and the compiler's choices (wgmma, async copies, TMA)")
    parser.add_argument("--dump", help="directory for ttgir/ptx of each compiled kernel")
    options = parser.parse_args(argv)
    module_name, _, kernel_name = options.kernel.partition(":")
    kernel = getattr(importlib.import_module(module_name), kernel_name)
    args = eval(options.args, {"torch": torch})
    bound = kernel.bind(args)
    failed = 0
    for label, config in configs_from(options.config, bound.config_spec):
        try:
            compiled = cross_compile(bound, args, config)
        except Exception as err:  # report every config, whatever the compiler raised
            failed += 1
            print(f"{label} FAILED {dict(bound.config_spec.normalize(config))}\n    {failure_summary(err)}", flush=True)
            continue
        for index, result in enumerate(compiled):
            info = f" {result.ptxas_info()} {result.features()}" if options.ptxas else ""
            print(f"{label} ok {result.name}{info}", flush=True)
            if options.dump:
                os.makedirs(options.dump, exist_ok=True)
                for ext in ("ttgir", "ptx"):
                    with open(os.path.join(options.dump, f"{label}_{index}_{result.name}.{ext}"), "w") as fh:
                        fh.write(result.asm[ext])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
