"""Assembles a compiled session into standalone Triton source: kernels, helper functions, launcher."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from . import nested
from .fast_launch import LAUNCH_HELPERS, rewrite_launches
from .host import HOST_HELPERS

IMPORTS = "from __future__ import annotations\n\nimport math\n\nimport torch\nimport triton\nimport triton.language as tl\n"

HELPERS = {
    "_num_sms": '''_NUM_SMS: dict = {}


def _num_sms(device: torch.device) -> int:
    """Multiprocessor count of a device (the interpreter runs CPU tensors: 4 programs)."""
    if device.type != "cuda":
        return 4
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _NUM_SMS:
        _NUM_SMS[key] = torch.cuda.get_device_properties(key).multi_processor_count
    return _NUM_SMS[key]
''',
    "_dependent_launch": '''_DEPENDENT_LAUNCH: dict = {}


def _dependent_launch(t: torch.Tensor) -> bool:
    """Whether kernels on `t`'s device take programmatic dependent launches (compute capability 9.0
    and later, not Triton's interpreter): the DEPENDENT_LAUNCH flag of a config's
    `dependent_launches` kernels."""
    device = t.device
    if device.type != "cuda" or triton.knobs.runtime.interpret:
        return False
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _DEPENDENT_LAUNCH:
        _DEPENDENT_LAUNCH[key] = torch.cuda.get_device_capability(key)[0] >= 9
    return _DEPENDENT_LAUNCH[key]
''',
    "_ensure_allocator": '''_ALLOCATOR_SET: list = []


def _ensure_allocator() -> None:
    """Tensor descriptors built inside kernels need a scratch allocator (set once)."""
    if not _ALLOCATOR_SET:
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        _ALLOCATOR_SET.append(True)
''',
    "_tma_operand": '''def _tma_operand(t: torch.Tensor) -> torch.Tensor:
    """`t` as a TMA descriptor takes it: unit last stride, the other strides and the base address
    multiples of 16 bytes. Other layouts are copied; rows that no copy aligns raise."""
    def fits(u):
        return u.stride(-1) == 1 and u.data_ptr() % 16 == 0 and \\
            all(s * u.element_size() % 16 == 0 for s in u.stride()[:-1])
    if fits(t):
        return t
    t = t.clone(memory_format=torch.contiguous_format)
    if not fits(t):
        raise ValueError(f"a TMA operand needs rows of a multiple of 16 bytes; got shape {tuple(t.shape)} of {t.dtype}")
    return t
''',
    "_tma_descriptor": '''_SHARED_LAYOUTS: dict = {}


def _tma_descriptor(t: torch.Tensor, block: list, shape: list):
    """A host-built TMA descriptor of `t` (see _tma_operand) for a Gluon kernel: tiles of `block`
    over `shape` (at most `t`'s sizes; elements past it read as zeros and are not written). A
    dimension of size 0 is given size 1: a kernel over an empty range never copies it."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    key = (tuple(block), t.dtype)
    if key not in _SHARED_LAYOUTS:
        dtype = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}[t.dtype]
        _SHARED_LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for(block, dtype)
    return TensorDescriptor(t, [max(1, s) for s in shape], list(t.stride()), block, _SHARED_LAYOUTS[key])
''',
    "_descriptor_scratch_fits": '''_DESCRIPTOR_BYTES = 128
_DESCRIPTOR_SCRATCH_LIMIT = 2**28


def _descriptor_scratch_fits(grid, descriptors: int) -> bool:
    """Whether a launch over `grid` may build `descriptors` tensor descriptors in every program.
    Triton gives each program a 128-byte slot per descriptor in a global scratch buffer that it
    allocates at every launch and addresses with 32-bit offsets, which wrap past 2 GiB (an illegal
    memory access). Warp specialization may add slots (4 for 3 descriptors, measured), so launches
    stay 8 times below that, at 256 MiB of scratch; larger ones index through pointers."""
    programs = 1
    for count in grid:
        programs *= count
    return programs * descriptors * _DESCRIPTOR_BYTES <= _DESCRIPTOR_SCRATCH_LIMIT
''',
    "_counters": '''_COUNTERS: dict = {}


def _counters(count: int, device: torch.device, lane: int = 0) -> torch.Tensor:
    """At least `count` int32 zeros for the launch that follows on `device` (helion.counters): the
    kernels that take them leave every entry at 0 when they end, so one buffer per device, stream
    and lane serves every launch, filled once (again when a launch needs more entries). Launches in
    one stream run in order; another stream gets its own buffer. Lane 0 is the host code's, lane 1
    the tile scheduler's (pid_type "persistent_dynamic"), so one launch may take both. While a CUDA
    graph is captured a fresh buffer is filled (the graph owns its memory, and its replays leave it
    zeroed too)."""
    if device.type == "cuda":
        if torch.cuda.is_current_stream_capturing():
            return torch.zeros(count, dtype=torch.int32, device=device)
        index = device.index if device.index is not None else torch.cuda.current_device()
        key = (index, torch._C._cuda_getCurrentRawStream(index), lane)
    else:
        key = (str(device), 0, lane)
    buffer = _COUNTERS.get(key)
    if buffer is None or buffer.numel() < count:
        buffer = _COUNTERS[key] = torch.zeros(max(count, 1024), dtype=torch.int32, device=device)
    return buffer
''',
    "_rng_seed": '''def _rng_seed() -> tuple:
    """A fresh 31-bit seed for one launch of a kernel that draws random numbers, from torch's
    default CPU generator (torch.manual_seed makes calls reproducible; no device sync), as two
    floats (its high 15 and low 16 bits, exact in float32): the launch cache keys each int
    argument on its value, which a new seed per call would miss."""
    seed = int(torch.randint(0, 2**31, (), dtype=torch.int64, device="cpu"))
    return float(seed >> 16), float(seed & 0xFFFF)
''',
    "_xyz_grid": '''_MAX_GRID_YZ = 65535


def _xyz_grid(grid: tuple) -> tuple:
    """The launch grid of a pid_type "xyz" loop: `grid` while its y and z counts fit CUDA's limit
    (65535 programs), else all of it folded into x (the kernel's _XYZ_FOLDED variant splits it)."""
    if max(grid[1:]) <= _MAX_GRID_YZ:
        return grid
    programs = 1
    for count in grid:
        programs *= count
    return (programs,)
''',
}


@dataclass
class GeneratedCode:
    """One compiled (kernel, specialization, config): kernels keyed by name, the launcher, helpers."""

    kernels: dict = field(default_factory=dict)
    launcher: str = ""
    helpers: dict = field(default_factory=dict)

    def module_source(self, header: str) -> str:
        parts = [header.rstrip() + "\n", IMPORTS]
        parts += [src for _, src in sorted(self.helpers.items())]
        parts += list(self.kernels.values())
        parts.append(self.launcher)
        return "\n\n".join(p.rstrip() + "\n" for p in parts)


def launcher_source(fn_name: str, tree: ast.FunctionDef, lines: list[str]) -> str:
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg(a.arg) for a in tree.args.args],
        vararg=None,
        kwonlyargs=[ast.arg(a.arg) for a in tree.args.kwonlyargs],
        kw_defaults=tree.args.kw_defaults,
        kwarg=None,
        defaults=tree.args.defaults,
    )
    signature = ast.unparse(args)
    body = "\n".join("    " + line for line in lines) if lines else "    pass"
    return f"def {fn_name}({signature}):\n{body}\n"


def generated_code(session, fn_name: str) -> GeneratedCode:
    """The module parts of `session`: its launcher and the kernels and helpers the launcher still
    launches (a launch over a provably empty grid is dropped, and its kernel with it)."""
    code = GeneratedCode()
    code.helpers["_launch"] = LAUNCH_HELPERS
    constexprs = {launch.name: [p.name for p in launch.builder.ordered_params() if p.constexpr]
                  for launch in session.kernels}
    lines = rewrite_launches(session.launcher_lines, constexprs)
    code.launcher = launcher_source(fn_name, session.parsed.tree, lines)
    launched = {node.id for node in ast.walk(ast.parse(code.launcher)) if isinstance(node, ast.Name)}
    for name in HOST_HELPERS.values():
        if name in launched:
            code.helpers[name] = HELPERS[name]
    if nested.HELPER in launched:
        code.helpers[nested.HELPER] = nested.SOURCE
    for launch in session.kernels:
        if launch.name not in launched:
            continue
        code.kernels[launch.name] = launch.source
        for helper in launch.helpers:
            code.helpers[helper] = HELPERS[helper]
    return code
