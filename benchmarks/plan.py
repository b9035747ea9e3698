"""What the report measures, most important first: the rows the runner walks until its budget ends.

Shapes use the kernel sources' shape keys (M/N, M/N/K, B/H/Hkv/Sq/Sk/D/causal), so their
`cost(shape, dtype)` gives the minimum bytes and flops; a row shape with an `S` between M and N
(decode calls only) times a 3-D [M, S, N] input, as a model's decode step passes its activations. `--tiny` shrinks every shape so the whole
pipeline runs on CPU under the Triton interpreter.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from kernels_src import ALL_OPS

from .impls import IMPLS

HIDDEN = (1024, 2048, 4096, 8192, 16384)
SEQ = (1024, 2048, 4096)
LONG_SEQ = 8192
DECODE_ROWS = (1, 16, 64)
MIXED_IMPLS = ("ours", "eager", "compile")  # the mixed-dtype rows' (Liger's functions take one dtype)


@dataclass(frozen=True)
class Row:
    """One case (op + shape + timing mode) and the implementations to time on it."""

    op: str                      # rmsnorm_fwd, rmsnorm_bwd, softmax_fwd, softmax_bwd, matmul, attention_fwd/bwd
    shape: dict
    impls: tuple = ()
    mode: str = "device"         # device: CUDA events, L2 flushed; host: per-call time of a call loop;
    #                              graph: per-call time of calls replayed from a CUDA graph
    plot: str | None = None      # "bandwidth" or "attention": which figure shows this case
    kind: str = "case"           # case | dispatch | first_call
    # other argument dtypes than bf16, keyed as the dispatcher keys them (`_variant.dtypes_key`):
    # "out_dtype=float32" (softmax of bf16 rows written in float32, what CUDA autocast asks),
    # "weight=float32" (RMSNorm of bf16 rows with a float32 weight, mixed-precision training's)
    dtypes: str = ""

    @property
    def family(self) -> str:
        return self.op.split("_")[0]

    @property
    def key(self) -> tuple:
        return self.op, tuple(sorted(self.shape.items())), self.mode, self.dtypes


@dataclass
class Plan:
    """Rows in the order added; a case planned again with the same impls is skipped."""

    tiny: bool
    rows: list = field(default_factory=list)
    seen: set = field(default_factory=set)

    def add(self, op, shape, impls=None, **kw):
        if self.tiny:
            shape = shrink(op, shape)
        row = Row(op, dict(shape), tuple(impls or IMPLS.get(op.split("_")[0], ())), **kw)
        if (row.key, row.impls) in self.seen:
            return
        self.seen.add((row.key, row.impls))
        self.rows.append(row)


def _attn(batch, heads, seq, dim, causal):
    """Self-attention shape key (as many key/value heads as query heads)."""
    return {"B": batch, "H": heads, "Hkv": heads, "Sq": seq, "Sk": seq, "D": dim, "causal": causal}


def shrink(op: str, shape: dict) -> dict:
    """The tiny CPU version of a shape (distinct sizes stay distinct where the plots need it)."""
    if op == "first_call":
        return shape
    if op.startswith("attention"):
        return {**shape, "B": 1, "H": 2, "Hkv": 2 if shape["H"] == shape["Hkv"] else 1,
                "Sq": max(4, shape["Sq"] // 128), "Sk": max(4, shape["Sk"] // 128), "D": shape["D"] // 4}
    if op == "matmul":
        return {k: max(1, v // 128) for k, v in shape.items()}
    rows = {"M": min(shape["M"], 4) if shape["M"] < 1024 else 8}
    return {**rows, **({"S": shape["S"]} if "S" in shape else {}), "N": max(16, shape["N"] // 128)}


def _suite(spec_name: str) -> list:
    """The bf16 tuning-suite shapes of a kernel source's op."""
    spec = next(s for s in ALL_OPS if s.name == spec_name)
    return list(spec.shapes) if torch.bfloat16 in spec.dtypes else []


def build(tiny: bool = False) -> list:
    """Every row in priority order: the DESIGN.md peer rows, dispatch overhead, the sweeps, the
    long rows and decode calls, matmul, attention, first calls, the mixed-dtype rows (softmax written
    in float32, RMSNorm with a float32 weight), the tuning-suite shapes, S=8192 and matmul against
    max-autotune last."""
    p = Plan(tiny)
    big = {"M": 16384, "N": 4096}
    p.add("rmsnorm_fwd", big, plot="bandwidth")
    p.add("rmsnorm_fwd", {"M": 1, "N": 4096}, mode="host")
    p.add("rmsnorm_bwd", big, plot="bandwidth")
    p.add("softmax_fwd", big, plot="bandwidth")
    p.add("softmax_fwd", {"M": 4096, "N": 131072})
    p.add("attention_fwd", _attn(4, 32, 4096, 128, False), plot="attention")
    p.add("attention_bwd", _attn(4, 32, 4096, 128, False), plot="attention")
    p.add("matmul", {"M": 4096, "N": 4096, "K": 4096}, impls=("ours", "cublas"))
    p.add("dispatch", {"M": 1, "N": 4096}, kind="dispatch", mode="host")
    for op in ("rmsnorm_fwd", "softmax_fwd", "rmsnorm_bwd", "softmax_bwd"):
        for n in HIDDEN:
            p.add(op, {"M": 16384, "N": n}, plot="bandwidth")
    p.add("softmax_bwd", {"M": 4096, "N": 131072})
    p.add("softmax_fwd", {"M": 2048, "N": 262144})
    p.add("softmax_bwd", {"M": 2048, "N": 262144})
    for mode in ("host", "graph"):
        for op in ("rmsnorm_fwd", "softmax_fwd"):
            for m in DECODE_ROWS:
                p.add(op, {"M": m, "N": 4096}, mode=mode)
    for op in ("rmsnorm_fwd", "softmax_fwd"):
        for m in DECODE_ROWS:
            p.add(op, {"M": m, "S": 1, "N": 4096}, mode="host")
    matmuls = [(8192, 8192, 8192), (4096, 11008, 4096), (4096, 4096, 11008),
               (16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096)]
    for m, n, k in matmuls:
        p.add("matmul", {"M": m, "N": n, "K": k}, impls=("ours", "cublas"))
    for dim in (128, 64):
        for causal in (False, True):
            for direction in ("fwd", "bwd"):
                for seq in SEQ:
                    p.add(f"attention_{direction}", _attn(4, 32, seq, dim, causal), plot="attention")
    p.add("first_call", {}, kind="first_call", mode="host")
    for n in (4096, 1024):
        for direction in ("fwd", "bwd"):
            p.add(f"softmax_{direction}", {"M": 16384, "N": n}, impls=MIXED_IMPLS, dtypes="out_dtype=float32")
            p.add(f"rmsnorm_{direction}", {"M": 16384, "N": n}, impls=MIXED_IMPLS, dtypes="weight=float32")
    for spec_name, op in (("rms_norm_fwd", "rmsnorm_fwd"), ("softmax_fwd", "softmax_fwd"),
                          ("rms_norm_bwd", "rmsnorm_bwd"), ("softmax_bwd", "softmax_bwd"),
                          ("attention_fwd", "attention_fwd"), ("attention_bwd", "attention_bwd")):
        for shape in _suite(spec_name):
            p.add(op, shape)
    for shape in _suite("matmul"):
        p.add("matmul", shape, impls=("ours", "cublas"))
    for dim in (128, 64):
        for causal in (False, True):
            for direction in ("fwd", "bwd"):
                p.add(f"attention_{direction}", _attn(4, 32, LONG_SEQ, dim, causal), plot="attention")
    p.add("matmul", {"M": 4096, "N": 4096, "K": 4096}, impls=("compile-max-autotune",))
    return p.rows


def _value(text: str):
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return int(text)


def select(rows: list, only: list) -> list:
    """The rows `only` names, in plan order: each item is an op (`rmsnorm_bwd`, `dispatch`,
    `first_call`), or an op and some of its shape keys (`rmsnorm_bwd:M=1,N=4096`,
    `attention_bwd:Sq=16384,causal=true`), which keeps that op's rows whose shape has those values.
    A name that matches no row is an error, so that a typo does not end in an empty report."""
    wanted = []
    for item in only:
        op, _, keys = item.partition(":")
        try:
            shape = {k.strip(): _value(v.strip()) for k, v in (pair.split("=") for pair in keys.split(",") if pair)}
        except ValueError:
            raise ValueError(f"--only {item!r}: write OP or OP:KEY=VALUE,KEY=VALUE") from None
        matched = [r for r in rows if r.op == op and all(r.shape.get(k) == v for k, v in shape.items())]
        if not matched:
            raise ValueError(f"--only {item!r} matches no row of the plan")
        wanted.append(matched)
    chosen = {id(r) for matched in wanted for r in matched}
    return [r for r in rows if id(r) in chosen]

