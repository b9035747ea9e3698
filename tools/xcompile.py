"""Cross-compiles a DSL kernel's generated Triton for sm_90 without a GPU and summarizes the result.

`python tools/xcompile.py matmul '{"M": 4096, "N": 4096, "K": 4096}' '{"block_sizes": [128, 256, 64]}'`
runs the generated host launcher on CPU tensors with the Triton kernels swapped for recorders, then
compiles each recorded launch with `triton.compile` for a CUDA sm_90 target (integer arguments get
the JIT's specializations: 1 becomes a constant, multiples of 16 get a divisibility hint). Printed per
kernel: wgmma use, async copies / TMA loads (pipelining), shared memory, and ptxas registers/spills.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import torch
import triton
from triton.backends.compiler import GPUTarget

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from build_tools.dsl.kernel import load_module  # noqa: E402
from build_tools.generate import op_families  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
TRITON_TYPES = {torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32"}


class Recorder:
    """Stands in for a `@triton.jit` function: `rec[grid](*args, **kwargs)` records the launch."""

    def __init__(self, fn, launches: list):
        self.fn, self.launches = fn, launches

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((self.fn, grid, args, kwargs))
        return launch


def record_launches(module, launcher: str, args) -> list:
    launches: list = []
    for name, value in list(vars(module).items()):
        if isinstance(value, (triton.runtime.JITFunction, Recorder)):
            setattr(module, name, Recorder(value.fn if isinstance(value, Recorder) else value, launches))
    getattr(module, launcher)(*args)
    return launches


def compile_launch(fn, args, kwargs):
    signature, constexprs, attrs = {}, {}, {}
    options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
    for i, (name, value) in enumerate(zip(fn.arg_names, list(args) + [kwargs.get(n) for n in fn.arg_names[len(args):]])):
        if name in kwargs or isinstance(value, bool) or (isinstance(value, int) and value == 1):
            signature[name], constexprs[(i,)] = "constexpr", value
        elif isinstance(value, torch.Tensor):
            signature[name] = TRITON_TYPES[value.dtype]
            attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "i32" if isinstance(value, int) else "fp32"
            if isinstance(value, int) and value % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
    source = triton.compiler.ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=TARGET, options=options)


def summarize(compiled) -> dict:
    ttgir, ptx = compiled.asm["ttgir"], compiled.asm["ptx"]
    path = "/tmp/xcompile.ptx"
    with open(path, "w") as fh:
        fh.write(ptx)
    out = subprocess.run([PTXAS, "-v", "--gpu-name", "sm_90a", path, "-o", "/tmp/xcompile.cubin"],
                         capture_output=True, text=True).stderr
    registers = re.search(r"Used (\d+) registers", out)
    spills = re.search(r"(\d+) bytes spill stores", out)
    return {
        "wgmma": "wgmma.mma_async" in ptx,
        "async_copy": ttgir.count("ttg.async_copy_global_to_local"),
        "tma_load": ttgir.count("async_tma_copy_global_to_local") + ttgir.count("ttng.async_tma"),
        "smem": compiled.metadata.shared,
        "registers": int(registers.group(1)) if registers else None,
        "spill_bytes": int(spills.group(1)) if spills else None,
        "warp_specialize": "ttg.warp_specialize" in ttgir,
    }


def main(argv) -> None:
    op_name, shape, overrides = argv[0], json.loads(argv[1]), json.loads(argv[2] if len(argv) > 2 else "{}")
    dtype = getattr(torch, argv[3]) if len(argv) > 3 else torch.bfloat16
    spec = next(s for specs in op_families().values() for s in specs if s.name == op_name)
    args = spec.make_inputs(shape, dtype, "cpu", 0)
    bound = spec.kernel.bind(args)
    config = bound.config_spec.normalize(bound.config_spec.default_config().merged(**overrides))
    module = load_module(bound.to_triton_code(config))
    for fn, grid, launch_args, kwargs in record_launches(module, spec.kernel.name, args):
        print(fn.__name__, summarize(compile_launch(fn, launch_args, dict(kwargs))))
    if os.environ.get("XCOMPILE_DUMP"):
        print(bound.to_triton_code(config))


if __name__ == "__main__":
    main(sys.argv[1:])
