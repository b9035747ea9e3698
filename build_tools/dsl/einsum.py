"""`torch.einsum` in device code, for the device compiler.

Two operands whose indices make a matrix product (one contracted index, one free index on each
side, at most one batch index shared by both and the output) go to the matrix product (tl.dot)
after permuting each operand to [batch, rows, contracted] / [batch, contracted, columns]. Every
other equation (one operand, several, outer products, matrix-vector products, several contracted
indices) is a broadcast product summed over the contracted indices: each operand permuted to the
order of the output's indices then the contracted ones, with unit dims where it lacks one, the
operands multiplied and the trailing contracted dims summed. An ellipsis stands for letters the
equation does not use, aligned to the right across operands as PyTorch broadcasts them; an index
repeated within one operand takes that operand's diagonal first."""
from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from . import exc
from .values import TVal


class EinsumMixin:
    def einsum_functions(self) -> dict[Any, Callable[..., Any]]:
        return {torch.einsum: self.einsum}

    def einsum(self, equation: str, *operands: Any) -> TVal:
        """torch.einsum(equation, *operands) (or the operands as one list)."""
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        values = [self.to_tval(v) for v in operands]
        inputs, output = self.einsum_indices(equation, values)
        for at, letters in enumerate(inputs):
            values[at], inputs[at] = self.einsum_diagonal(equation, values[at], letters)
        if len(values) == 2 and self.is_matrix_product(inputs, output):
            return self.einsum_by_dot(values, inputs, output)
        contracted = [c for c in dict.fromkeys("".join(inputs)) if c not in output]
        order = output + "".join(contracted)
        product = None
        for value, letters in zip(values, inputs):
            present = sorted(letters, key=order.index)
            placed = self.permute(value, [letters.index(c) for c in present])
            for axis, c in enumerate(order):
                if c not in letters:
                    placed = self.unsqueeze(placed, axis)
            product = placed if product is None else self.binary(ast.Mult(), product, placed)
        if contracted:
            product = self.reduce("sum", product, list(range(len(output), len(order))))
        return product

    def einsum_indices(self, equation: str, values: list) -> tuple[list, str]:
        """The index letters of each operand and of the output (implicit: the ellipsis's, then the
        letters used once in alphabetical order), an ellipsis spelled out in unused letters,
        checked against the operands' ranks."""
        text = equation.replace(" ", "")
        left, arrow, right = text.partition("->")
        inputs = left.split(",")
        if len(inputs) != len(values):
            raise self.error(exc.ShapeMismatch, f"torch.einsum {equation!r} names {len(inputs)} operands; {len(values)} given")
        spare = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in text]
        spans = [len(value.shape) - len(term.replace("...", "")) if "..." in term else 0 for term, value in zip(inputs, values)]
        broadcast = "".join(spare[:max(spans, default=0)])
        inputs = [term.replace("...", broadcast[len(broadcast) - span:] if span > 0 else "") for term, span in zip(inputs, spans)]
        letters = "".join(inputs)
        if arrow:
            output = right.replace("...", broadcast)
        else:
            output = broadcast + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in broadcast))
        for term, value in zip(inputs, values):
            if not term.isalpha() or len(term) != len(value.shape):
                raise self.error(exc.ShapeMismatch, f"torch.einsum {equation!r}: {term!r} for a value of shape {self.shape_text(value.shape)}")
        if (output and not output.isalpha()) or len(set(output)) != len(output) or any(c not in letters for c in output):
            raise self.error(exc.ShapeMismatch, f"torch.einsum {equation!r}: output indices {output!r}")
        return inputs, output

    def einsum_diagonal(self, equation: str, value: TVal, letters: str) -> tuple[TVal, str]:
        """`value` and its letters with each index repeated within them taken once: the diagonal of
        its first two dims (of one extent, or one tile's dim twice), which goes last."""
        while len(set(letters)) != len(letters):
            c = next(c for c in letters if letters.count(c) > 1)
            first = letters.index(c)
            second = letters.index(c, first + 1)
            if value.shape[first] is not value.shape[second]:  # one dim twice (a tile's): diagonal() takes it
                extents = {self.constant_extent(value.shape[a], "torch.einsum's diagonal") for a in (first, second)}
                if len(extents) > 1:
                    raise self.error(exc.ShapeMismatch, f"torch.einsum {equation!r}: index {c!r} repeated within "
                                     f"{letters!r} over extents {sorted(extents)}")
            value = self.diagonal(value, 0, first, second)
            letters = letters[:first] + letters[first + 1:second] + letters[second + 1:] + c
        return value, letters

    def is_matrix_product(self, inputs: list, output: str) -> bool:
        """Whether two operands' indices are a (batched) matrix product: one contracted index, one
        free index on each side, and every other index a batch index of both and the output."""
        a, b = (set(t) for t in inputs)
        contracted = (a & b) - set(output)
        batch = a & b & set(output)
        return (len(contracted) == 1 and len(batch) <= 1 and len(a - b) == 1 and len(b - a) == 1
                and (a - b) <= set(output) and (b - a) <= set(output))

    def einsum_by_dot(self, values: list, inputs: list, output: str) -> TVal:
        a_letters, b_letters = inputs
        (k,) = (set(a_letters) & set(b_letters)) - set(output)
        batch = "".join(c for c in output if c in a_letters and c in b_letters)
        (m,), (n,) = set(a_letters) - set(b_letters), set(b_letters) - set(a_letters)
        a = self.permute(values[0], [a_letters.index(c) for c in batch + m + k])
        b = self.permute(values[1], [b_letters.index(c) for c in batch + k + n])
        product_letters = batch + m + n
        product = self.matmul(a, b)
        return self.permute(product, [product_letters.index(c) for c in output])
