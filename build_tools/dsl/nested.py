"""NestedTensor arguments (torch.nested's jagged layout: [B, j, *rest], ragged along dim 1), as
Helion takes them. Host code sees a `_JaggedArgument`: `size(0)` is B, `size(1)` the longest
component (a number read on the device, so a run-time scalar: host.DeviceReads counts the read
while binding, and the launcher computes it per call unless the tensor caches it), `size(i)` for
i > 1 the dense dims. Device code indexes it `x[b, j, ...]` (b a tile or an index over B, j one
over the ragged dim): element j of component b, which is `values[offsets[b] + j, ...]`, masked
where j is past that component's length (loads read 0 there, stores skip it). The generated
launcher views the argument first (`x_jagged = _jagged_argument(x)`), with the class below as its
helper, so the kernels read `x_jagged.values` and `x_jagged.offsets` as two tensors."""
from __future__ import annotations

import ast
from typing import Any

import torch

from . import exc
from .values import HostTensor, TileVal, TVal

HELPER = "_jagged_argument"
SOURCE = '''class _JaggedArgument:
    """A jagged-layout NestedTensor argument: its packed `values` [total, *rest] and `offsets`
    [B + 1]; size(1) is the longest component's length."""

    is_nested = True

    def __init__(self, values, offsets, longest=None):
        self.values = values
        self.offsets = offsets
        self.longest = longest
        self.dtype = values.dtype
        self.device = values.device

    def size(self, dim=None):
        if dim is None:
            return tuple(self.size(d) for d in range(self.dim()))
        dim = dim % self.dim()
        if dim == 0:
            return self.offsets.size(0) - 1
        if dim > 1:
            return self.values.size(dim - 1)
        if self.longest is None:
            self.longest = int((self.offsets[1:] - self.offsets[:-1]).max()) if self.offsets.size(0) > 1 else 0
        return self.longest

    @property
    def shape(self):
        return self.size()

    def dim(self):
        return self.values.dim() + 1

    ndim = property(dim)


def _jagged_argument(x):
    """The launcher's view of a NestedTensor argument of torch.jagged layout."""
    return _JaggedArgument(x.values(), x.offsets(), getattr(x, "_maybe_max_seqlen", None))
'''
_NAMESPACE: dict = {}
exec(SOURCE, _NAMESPACE)
JaggedArgument = _NAMESPACE["_JaggedArgument"]


def launcher_name(name: str) -> str:
    """The launcher's name for its view of NestedTensor argument `name` (host code's `x.size(1)`
    reads it; `return x` returns the argument itself)."""
    return f"{name}_jagged"


def is_nested(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_nested


def parts(value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The packed values and offsets of a jagged-layout NestedTensor argument."""
    if value.layout != torch.jagged:
        raise exc.NotSupported("a NestedTensor argument of torch.strided layout; kernels take torch.jagged ones")
    if value._ragged_idx != 1:
        raise exc.NotSupported(f"a NestedTensor argument ragged along dim {value._ragged_idx}; kernels take dim 1")
    return value.values(), value.offsets()


class MetaJaggedArgument(JaggedArgument):
    """What binding's host analysis sees of a NestedTensor argument: its parts as meta tensors, and
    its longest component's length as a device read (host.DeviceReads) whose hint is the bound
    call's length, so that the ragged dim's block sizes range up to that length, not up to
    DeviceReads.INT_HINT (tiles of 8192 along a dim of 17 asked the H100 for 393 KB of shared
    memory, 2026-12-06)."""

    def __init__(self, values: torch.Tensor, offsets: torch.Tensor, hint: int | None):
        super().__init__(values, offsets)
        self.hint = hint

    def size(self, dim: int | None = None) -> Any:
        if dim is None or dim % self.dim() != 1 or self.offsets.size(0) <= 1:
            return super().size(dim)
        longest = (self.offsets[1:] - self.offsets[:-1]).max()
        if self.hint is not None:
            longest.read_hint = self.hint
        return int(longest)


def meta_argument(value: torch.Tensor) -> Any:
    """Host analysis's view of a NestedTensor argument (MetaJaggedArgument). Its hint is the cached
    longest length where the tensor has one, else read from its offsets (a device sync per
    compile); a meta NestedTensor has none (DeviceReads.INT_HINT)."""
    values, offsets = parts(value)
    cached = getattr(value, "_maybe_max_seqlen", None)
    hint = None if cached is None and offsets.is_meta else max(JaggedArgument(values, offsets, cached).size(1), 1)
    return MetaJaggedArgument(values.to("meta"), offsets.to("meta"), hint)


def tensor_parts_key(value: torch.Tensor, tensor_key: Any) -> tuple:
    """A NestedTensor argument's part of a specialization key: its parts' keys."""
    values, offsets = parts(value)
    return ("nested", tensor_key(values), tensor_key(offsets))


class NestedMixin:
    """Device-code indexing of NestedTensor arguments (a DeviceCompiler mixin)."""

    def nested_address(self, argument: Any, text: str, index: list, node: ast.AST) -> tuple:
        """The values tensor, its index and the mask of `argument[index]` (`text` names the
        argument in the launcher)."""
        if len(index) < 2:
            raise self.error(exc.NotSupported, "a NestedTensor indexed by fewer than two indices "
                             "(its batch and ragged dims)", node)
        if len(index) > argument.dim():
            raise self.error(exc.ShapeMismatch, f"{len(index)} indices into a NestedTensor of {argument.dim()} dims", node)
        batch, ragged, rest = index[0], index[1], index[2:]
        for what, item in (("batch", batch), ("ragged", ragged)):
            if isinstance(item, slice) or item is None:
                raise self.error(exc.NotSupported, f"a NestedTensor's {what} dim indexed by a slice or None; "
                                 "index it by a tile, a tensor or an integer", node)
        if text not in self.session.nested_args:
            raise self.error(exc.NotSupported, f"a NestedTensor indexed through {text!r}; index the kernel's "
                             "argument by its own name", node)
        view = self.session.nested_args[text]
        values, offsets = (HostTensor(self.builder.param(f"{view}.{part}", f"{text}_{part}"), getattr(argument, part),
                                      f"{view}.{part}") for part in ("values", "offsets"))
        batch_index = self.to_tval(batch) if isinstance(batch, TileVal) else batch
        starts = self.load(offsets, [batch], None, node)
        lengths = self.binary(ast.Sub(), self.load(offsets, [self.binary(ast.Add(), batch_index, 1)], None, node), starts)
        position = self.to_tval(ragged) if isinstance(ragged, TileVal) else ragged
        if starts.shape and self.shape_of(position):
            starts, lengths = self.unsqueeze(starts, -1), self.unsqueeze(lengths, -1)
        rows = self.binary(ast.Add(), starts, position)
        mask = self.binary(ast.Lt(), position, lengths)
        for item in rest if self.shape_of(mask) else ():  # the dims the other indices add follow the rows' dims
            for _ in range(len(self.shape_of(item)) if isinstance(item, TVal) else int(isinstance(item, (TileVal, slice)))):
                mask = self.unsqueeze(mask, -1)
        return values, [rows, *rest], mask

    def nested_load(self, argument: Any, text: str, index: list, node: ast.AST) -> TVal:
        values, rows, mask = self.nested_address(argument, text, index, node)
        return self.load(values, rows, mask, node)

    def nested_store(self, argument: Any, text: str, index: list, value: Any, node: ast.AST) -> None:
        values, rows, mask = self.nested_address(argument, text, index, node)
        self.store(values, rows, value, mask, node)
