"""KernelBuilder: accumulates one Triton kernel's parameters and body lines, then renders its source."""
from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from typing import Iterator

from .sync import CONCURRENT_PROGRAMS_FLAG


@dataclass
class Param:
    name: str
    host_expr: str  # expression evaluated in the launcher to produce the argument
    constexpr: bool = False


class KernelBuilder:
    def __init__(self, fn_name: str):
        self.fn_name = fn_name
        self.params: dict[str, Param] = {}
        self.param_by_expr: dict[tuple[str, bool], str] = {}
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.launch_constants: dict[str, str] = {}  # constexpr param -> launcher expression
        self.prologue_lines: list[str] = []  # launcher lines run before the launch
        self.uses_tensor_descriptors = False
        self.load_flags: list[str | None] = []  # each load's TMA flag (a constexpr), None for pointers
        self.warp_specialize_flags: list[str] = []  # constexprs of warp-specialized loops (DeviceCompiler.define_warp_specialize)
        self.loops = 0  # the kernel's loops, not counting a program's persistent loop
        self.programs_wait = False  # programs wait for each other (hl.wait): they must run concurrently
        self.compile_options: dict = {}  # options beside num_warps/num_stages (`maxnreg`): compile_options_text
        self.helpers: dict[str, str] = {}  # name -> source of a `@triton.jit` function the kernel calls

    def helper(self, params: list[str], lines: list[str], prefix: str) -> str:
        """The name of a module-level `@triton.jit` function of `params` with body `lines` (a combine
        function of tl.associative_scan / tl.reduce), named by a digest of its text."""
        body = "\n".join("    " + line for line in lines)
        text = f"(" + ", ".join(params) + "):\n" + body + "\n"
        name = f"_{prefix}_{hashlib.sha1(text.encode()).hexdigest()[:10]}"
        self.helpers.setdefault(name, f"@triton.jit\ndef {name}{text}")
        return name

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def emit_loop(self, header: str, counted: bool = True) -> None:
        """A loop's `for` line; `counted=False`: another compiled branch of a loop already counted."""
        self.loops += counted
        self.emit(header)

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        self.depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.emit("pass")
            self.depth -= 1

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def assign(self, expr: str, prefix: str = "v") -> str:
        name = self.fresh(prefix)
        self.emit(f"{name} = {expr}")
        return name

    def param(self, host_expr: str, hint: str, constexpr: bool = False) -> str:
        """The kernel parameter carrying `host_expr` (deduplicated by expression)."""
        key = (host_expr, constexpr)
        if key in self.param_by_expr:
            return self.param_by_expr[key]
        name = _identifier(hint)
        while name in self.params:
            name = f"{_identifier(hint)}_{len(self.params)}"
        self.params[name] = Param(name, host_expr, constexpr)
        self.param_by_expr[key] = name
        return name

    def constexpr(self, name: str, launcher_expr: str) -> str:
        if name not in self.params:
            self.params[name] = Param(name, launcher_expr, constexpr=True)
        return name

    def ordered_params(self) -> list[Param]:
        """Runtime arguments first, then constexprs (which the launcher passes by keyword)."""
        return [p for p in self.params.values() if not p.constexpr] + [p for p in self.params.values() if p.constexpr]

    def render(self) -> tuple[str, str]:
        """Returns (kernel name, kernel source). The name derives from a hash of the text as a
        `triton.jit` function; the source defines it on its first launch instead
        (launch_helpers._jit_on_first_launch). A kernel
        whose programs wait for each other carries the flag that makes Triton's interpreter run
        them concurrently (sync.CONCURRENT_PROGRAMS_FLAG)."""
        signature = ", ".join(f"{p.name}: tl.constexpr" if p.constexpr else p.name for p in self.ordered_params())
        body = "\n".join(self.lines) if self.lines else "    pass"
        function = "def {name}(" + signature + "):\n" + body + "\n"
        helpers = "".join(source + "\n\n" for _, source in sorted(self.helpers.items()))
        flag = f"\n\n{{name}}.fn.{CONCURRENT_PROGRAMS_FLAG} = True\n" if self.programs_wait else ""
        flag += compile_options_text(self.compile_options)
        digest = hashlib.sha1((helpers + "@triton.jit\n" + function + flag).encode()).hexdigest()[:10]
        name = f"_{self.fn_name}_kernel_{digest}"
        return name, helpers + KERNEL_DECORATOR + function.replace("{name}", name, 1) + flag.replace("{name}", name)


KERNEL_DECORATOR = "@_jit_on_first_launch\n"


# a combine function of KernelBuilder.helper: its decorator, its def line, its indented body
COMBINE_FUNCTION = re.compile(r"^@triton\.jit\ndef (\w+)\([^\n]*\n(?:[ \t]+[^\n]*\n)*\n*", re.M)


def split_helpers(source: str) -> tuple[str, str]:
    """(the combine functions, the kernel from its `def` on) of a source from KernelBuilder.render."""
    helpers, kernel = source.split(KERNEL_DECORATOR, 1)
    return helpers, kernel


def split_combine_functions(source: str) -> tuple[dict, str]:
    """({name: text} of the combine functions in a kernel's source (Triton or lowered), the source
    without them), so that a module holding many kernels defines each function once."""
    found = {}

    def take(match: re.Match) -> str:
        found[match.group(1)] = match.group(0).rstrip("\n") + "\n"
        return ""

    return found, COMBINE_FUNCTION.sub(take, source)


def compile_options_text(options: dict) -> str:
    """The module text after a kernel's definition that gives the options it compiles under beside
    num_warps and num_stages (read by launch_helpers._compile_options); "" for none. `{name}` stands
    for the kernel's name, whose digest covers this text."""
    return f"\n\n{{name}}.fn.hk_compile_options = {dict(sorted(options.items()))!r}\n" if options else ""


def _identifier(text: str) -> str:
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)
    while "__" in out:
        out = out.replace("__", "_")
    out = out.strip("_") or "arg"
    if out[0].isdigit():
        out = "a_" + out
    return out
