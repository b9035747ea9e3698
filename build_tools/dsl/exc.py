"""DSL errors. Every error raised while compiling a kernel names the construct and the kernel's file:line."""
from __future__ import annotations


class Base(Exception):
    """Base class of every DSL error."""


class CompileError(Base):
    """A construct the compiler rejects, reported at its source location."""

    def __init__(self, message: str, location: str | None = None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)

    def with_location(self, location: str) -> "CompileError":
        if self.location is not None:
            return self
        return type(self)(self.message, location)


class NotSupported(CompileError):
    """The kernel uses a Python or torch construct the DSL does not support in that position."""


class ShapeMismatch(CompileError):
    """Device-code operands whose shapes do not broadcast."""


class TypeMismatch(CompileError):
    """A value of the wrong kind (e.g. a tensor where a tile is required)."""


class NotLoopable(CompileError):
    """A looped reduction was requested over a dimension whose values cannot be recomputed chunk by chunk."""

    rdims: tuple = ()

    def with_rdims(self, rdims: list) -> "NotLoopable":
        self.rdims = tuple(rdims)
        return self

    def with_location(self, location: str) -> "CompileError":
        return self


class InvalidConfig(Base):
    """A Config with an unknown field or an illegal value for the bound kernel."""


class BaseWarning(UserWarning):
    """Base class of the warnings Helion programs name (in `ignore_warnings=[...]`). The DSL emits
    none of them; the names exist so that such programs run unchanged."""


class TensorOperationInWrapper(BaseWarning):
    """Helion's warning for a tensor operation in host code (which is not fused into the kernel)."""


class TensorOperationsInHostCall(TensorOperationInWrapper):
    """Helion's warning naming the host-code tensor operations of one call."""


class WrongDevice(BaseWarning):
    """Helion's warning for an operation returning a tensor on another device than the kernel's."""


class BlockSizeIgnoredInInterpretMode(BaseWarning):
    """Helion's warning that its own interpret mode ignores block sizes."""


class TiledKMatmulAccumulationWarning(BaseWarning):
    """Helion's warning for `acc += a @ b` over K tiles (addmm or hl.dot(acc=) accumulate exactly)."""
