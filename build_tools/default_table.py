"""`python -m build_tools default-table [--check]`: write `tuned_configs/default.json`.

The default table holds documented heuristic configs, used on architectures without a tuned table
and for ops/dtypes/specializations a tuned table lacks. Each entry is the kernel's
`config_spec.default_config()` with the overrides of one rule below, normalized by the config
spec, at a representative shape; the dispatcher's nearest-shape choice then splits sizes between
the entries (e.g. row lengths below ~8192 pick the persistent-reduction entry of a row op).

Entries cover every dtype the runtime sends to kernels (float16, bfloat16, float32), not only the
dtypes an op's tuning suite lists: the kernels are dtype-generic. Rules, by the shape keys of an
op's tuning suite:
- rows {M, N} (norms, softmax): rows up to 4096 elements are reduced in registers (persistent
  reduction) with 4 warps (N <= 1024) or 8; longer rows loop over chunks of 4096 elements
  (`reduction_loops`) with 16 warps. Entries sit at N = 1024, 4096, 16384, 131072, so the
  nearest-shape choice switches to looping above N ~ 8192.
- rows, per op (ROW_OP_RULES, the best configs of benchmarks/membound_probe.py on an H200, bf16):
  rms_norm_fwd keeps whole rows in registers up to N = 16384 (8 warps) and splits longer rows
  into 2048-column tiles (a partial sum-of-squares pass, then the normalizing pass); rms_norm_bwd
  takes whole rows up to N = 16384 (16 warps; 132 or 264 dW partial rows, rows interleaved across
  programs, 4 rows per step up to N = 4096) and split columns beyond; the dW partial rows are summed
  by the sum pass (32-column programs, 64 partial rows per step) beyond N = 1024 and by the host up
  to it (H100: the sum pass at 64-column tiles took 0.81x of the host's time at 16384x1024 with 512
  partial rows, 1.01-1.19x with 132); softmax_fwd/bwd take whole
  rows up to N = 16384 (16 warps, 32 for the N = 16384 backward); beyond, rows split into pieces
  re-read from L2 (split_rows, 1-stage loops; scratch/split_reread_probe.py on an H100, bf16
  4096x131072): the forward in pieces of two 8192-column tiles at 8 warps (85.8% of copy against
  67.2% for online softmax over column tiles), the backward in pieces of two 4096-column tiles at 16
  warps (92.1% against 91.5% for 4096-column pieces held in registers). A whole-row config of
  rms_norm_bwd or softmax sets its unused column tile to 4096: the DSL caps num_warps by the block
  volume of the structure its discovery saw (split columns / column tiles), where that tile counts.
- matrices {M, N, K}, measured on an H200 (tools/matmul_sweep.py; 16/64/128-row and 4096-8192
  products, bf16): M <= 32 takes 16x32x256 tiles, 4 warps, 4 stages (128 programs stream the
  [K, N] operand at N = 4096); M ~ 128 takes 64x64x128 tiles, 4 warps, 5 stages, and with a wide
  N (~11008) 128x128x64 tiles, 8 warps, 4 stages over tensor descriptors; large products take
  128x256x64 tiles, 8 warps, 3 stages, tensor-descriptor (TMA) loads and stores, a persistent
  interleaved program order and L2 grouping 8 (0.90-1.03x cuBLAS).
  K tiles are halved for float32 (same bytes per stage), and large float32 products keep
  128x128x32 pointer tiles: the 128x256 fp32 output tile of a TMA store does not fit beside the
  operand buffers in shared memory.
- batched {B, M, N, K} (one batch per program, 2-D tiles): 16x128x64 tiles, 4 warps, 4 stages for
  16-row batches; 128x128x64, 8 warps, 3 stages for shallow K (~128); 128x256x64, 8 warps,
  3 stages, L2 grouping 8 for deep K.
- attention {.., D, causal}: one entry per head dim D in 16..256, causal flag and op, from the
  ATTENTION_* tables below (measured on an H200 for D 64 and 128; smaller tiles and fewer stages
  for float32, whose tiles take twice the shared memory).
A wanted value the kernel's config spec does not offer at the representative shape becomes the
largest legal value below it (else the default); the entry's "adjusted" field lists those cases.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

from build_tools.generate import TABLE_DIR, op_families
from helion_kernels._backend import KERNEL_DTYPES
from helion_kernels._variant import to_plain, variant_id

DEFAULT_PATH = TABLE_DIR / "default.json"
PERSISTENT_MAX_N = 4096
LOOP_CHUNK = 4096
ROW_SIZES = (1024, 4096, 16384, 131072)
HEAD_DIMS = (16, 32, 64, 128, 256)


def _row_rule(n: int) -> dict:
    warps = 4 if n <= 1024 else 8 if n <= PERSISTENT_MAX_N else 16
    return {"num_warps": warps, "reduction_loops": [None] if n <= PERSISTENT_MAX_N else [LOOP_CHUNK]}


def _rms_norm_fwd_rule(n: int) -> dict:
    if n <= 16384:
        return {"split_columns": False, "num_warps": 4 if n <= 1024 else 8, "reduction_loops": [None]}
    return {"split_columns": True, "block_sizes": [2, 2048], "num_warps": 8, "reduction_loops": [16],
            "load_eviction_policies": ["last", "", "first", ""]}


def _rms_norm_bwd_rule(n: int) -> dict:
    sum_pass = [64, 32]  # 64 partial rows per step of 32-column programs
    if n <= 1024:
        return {"split_columns": False, "dweight_partials": 512, "block_sizes": [4, 4096, *sum_pass], "num_warps": 8,
                "finish_dweight": "host"}
    if n <= 16384:
        rows, partials = (4, 132) if n <= 4096 else (1, 264)
        return {"split_columns": False, "dweight_partials": partials, "block_sizes": [rows, 4096, *sum_pass],
                "num_warps": 16, "finish_dweight": "sum_pass"}
    return {"split_columns": True, "dweight_partials": 8, "block_sizes": [1, 4096, *sum_pass], "num_warps": 8,
            "finish_dweight": "sum_pass"}


def _softmax_rule(tunable: str, backward: bool):
    def rule(n: int) -> dict:
        if n <= 16384:
            warps = 4 if n <= 1024 else 32 if backward and n > 4096 else 16
            return {tunable: False, "block_sizes": [4096, 2 if n == 4096 and not backward else 1], "num_warps": warps}
        block, warps = (4096, 16) if backward else (8192, 8)
        return {"split_rows": True, "piece_tiles": 2, "block_sizes": [block, 1], "num_warps": warps, "num_stages": 1}
    return rule


ROW_OP_RULES = {
    "rms_norm_fwd": _rms_norm_fwd_rule,
    "rms_norm_bwd": _rms_norm_bwd_rule,
    "softmax_fwd": _softmax_rule("online_softmax", backward=False),
    "softmax_bwd": _softmax_rule("two_pass_rows", backward=True),
}


MATRIX_RULES = {  # name: (block sizes M, N, K for 2-byte dtypes, warps, stages, other overrides)
    "tiny-M matrix": ([16, 32, 256], 4, 4, {}),
    "skinny matrix": ([64, 64, 128], 4, 5, {}),
    "skinny wide matrix": ([128, 128, 64], 8, 4, {"indexing": ["tensor_descriptor"]}),
    "large matrix": ([128, 256, 64], 8, 3, {"indexing": ["tensor_descriptor"], "pid_type": "persistent_interleaved",
                                           "l2_groupings": [8]}),
    "small batched matrix": ([16, 128, 64], 4, 4, {}),
    "shallow batched matrix": ([128, 128, 64], 8, 3, {}),
    "large batched matrix": ([128, 256, 64], 8, 3, {"l2_groupings": [8]}),
}
LARGE_FP32 = ([128, 128, 32], 8, 3, {"l2_groupings": [8]})


def _matrix_rule(name: str, dtype: torch.dtype) -> dict:
    if (name, dtype) == ("large matrix", torch.float32):
        tiles, warps, stages, extra = LARGE_FP32
    else:
        tiles, warps, stages, extra = MATRIX_RULES[name]
        tiles = tiles[:2] + [tiles[2] * 2 // dtype.itemsize]
    return {"block_sizes": tiles, "num_warps": warps, "num_stages": stages, **extra}


# Attention (block_sizes, num_warps, num_stages) by (head-dim bucket, causal), 2- and 1-byte inputs.
# Forward block_sizes: [query tile, key tile]; backward: [dq query tile, dq key tile, dk/dv key tile,
# dk/dv query tile] (its two kernels share num_warps/num_stages). D 64 and 128: the best of 5-6
# candidates on an H200 at B=4, H=32, S=1024 and 4096, bf16 (benchmarks/attention_probe.py,
# 2026-11-22); D 256: the largest tiles that ptxas compiles without spills at 8 warps.
ATTENTION_FWD = {(64, False): ([128, 64], 4, 3), (64, True): ([64, 64], 4, 3),
                 (128, False): ([128, 64], 8, 3), (128, True): ([64, 64], 4, 3),
                 (256, False): ([64, 32], 8, 2), (256, True): ([64, 32], 8, 2)}
ATTENTION_BWD = {(64, False): ([64, 64, 64, 64], 4, 3), (64, True): ([64, 64, 64, 32], 4, 3),
                 (128, False): ([64, 32, 64, 32], 4, 3), (128, True): ([64, 32, 64, 32], 4, 3),
                 (256, False): ([32, 32, 32, 16], 8, 2), (256, True): ([32, 32, 32, 16], 8, 2)}
# float32 (TF32 dots): tiles twice the bytes, so fewer stages, 8 warps for the larger backward, and
# at D 256 the configs with the fewest ptxas spills found (some remain).
ATTENTION_FWD_FP32 = {64: ([64, 64], 4, 2), 128: ([64, 64], 4, 2), 256: ([64, 16], 8, 2)}
ATTENTION_BWD_FP32 = {64: ([64, 32, 64, 32], 4, 2), 128: ([64, 32, 64, 32], 8, 2), 256: ([16, 16, 16, 16], 4, 2)}


def _attention_rule(op: str, head_dim: int, causal: bool, dtype: torch.dtype) -> dict:
    bucket = 64 if head_dim <= 64 else 128 if head_dim <= 128 else 256
    if dtype == torch.float32:
        blocks, warps, stages = (ATTENTION_FWD_FP32 if op == "attention_fwd" else ATTENTION_BWD_FP32)[bucket]
    else:
        blocks, warps, stages = (ATTENTION_FWD if op == "attention_fwd" else ATTENTION_BWD)[(bucket, causal)]
    return {"block_sizes": blocks, "num_warps": warps, "num_stages": stages}


def representative_points(keys: set, op: str = "", dtype: torch.dtype = torch.bfloat16) -> list:
    """(shape, overrides, rule name) for op `op` at `dtype` whose tuning suite has shape keys `keys`; shapes are
    big enough for every wanted value to be legal and small enough to bind quickly on CPU."""
    if keys == {"M", "N"}:
        if op in ROW_OP_RULES:
            return [({"M": 64, "N": n}, ROW_OP_RULES[op](n), f"rows ({op})") for n in ROW_SIZES]
        return [({"M": 64, "N": n}, _row_rule(n), "rows") for n in ROW_SIZES]
    if keys == {"M", "N", "K"}:
        points = [({"M": 16, "N": 4096, "K": 4096}, "tiny-M matrix"), ({"M": 128, "N": 4096, "K": 4096}, "skinny matrix"),
                  ({"M": 128, "N": 11008, "K": 4096}, "skinny wide matrix"),
                  ({"M": 2048, "N": 2048, "K": 2048}, "large matrix")]
        return [(shape, _matrix_rule(rule, dtype), rule) for shape, rule in points]
    if keys == {"B", "M", "N", "K"}:
        points = [({"B": 64, "M": 16, "N": 128, "K": 4096}, "small batched matrix"),
                  ({"B": 32, "M": 1024, "N": 1024, "K": 128}, "shallow batched matrix"),
                  ({"B": 4, "M": 1024, "N": 1024, "K": 1024}, "large batched matrix")]
        return [(shape, _matrix_rule(rule, dtype), rule) for shape, rule in points]
    if "D" in keys:
        points = []
        for head_dim in HEAD_DIMS:
            for causal in (False, True):
                shape = {"B": 1, "H": 2, "Hkv": 2, "Sq": 1024, "Sk": 1024, "D": head_dim, "causal": causal}
                points.append(({k: v for k, v in shape.items() if k in keys}, _attention_rule(op, head_dim, causal, dtype),
                               "attention"))
        return points
    raise ValueError(f"no default rule for shape keys {sorted(keys)}")


def _pick(choices, wanted, default):
    """`wanted` if legal, else the largest legal integer below it, else `default`."""
    if choices is None or wanted in choices:
        return wanted
    if isinstance(wanted, int):
        below = [c for c in choices if isinstance(c, int) and not isinstance(c, bool) and c <= wanted]
        if below:
            return max(below)
    return default


def heuristic_config(config_spec, overrides: dict) -> tuple:
    """(normalized config dict, notes on wanted values that had to be adjusted)."""
    from build_tools.dsl import Config, exc
    from build_tools.dsl.config_spec import PER_STRUCTURE_KNOBS

    default = to_plain(config_spec.default_config())
    knobs = config_spec.knobs_of({**default, **overrides})
    choices = {(knob.name, knob.index): tuple(knob.choices) for knob in knobs}
    config, adjusted = dict(default), []
    for name, wanted in overrides.items():
        if name not in default:
            adjusted.append(f"{name}: not a knob of this kernel")
            continue
        current = default[name]
        if name in PER_STRUCTURE_KNOBS:  # one entry per position of the structure the overrides compile
            current = [current[i] if i < len(current) else knob.choices[0]
                       for i, knob in enumerate(k for k in knobs if k.name == name)]
        if isinstance(current, list):
            wanted = [wanted[min(i, len(wanted) - 1)] for i in range(len(current))]
            value = [_pick(choices.get((name, i)), w, c) for i, (w, c) in enumerate(zip(wanted, current))]
        else:
            value = _pick(choices.get((name, None)), wanted, current)
        if value != wanted:
            adjusted.append(f"{name}: wanted {wanted}, legal here {value}")
        config[name] = value
    try:
        normalized = to_plain(config_spec.normalize(Config(config)))
    except exc.InvalidConfig as error:
        return default, adjusted + [f"overrides rejected ({error}); default config used"]
    adjusted += [f"{name}: wanted {config[name]}, the config spec normalized it to {normalized[name]}"
                 for name in overrides if name in config and normalized.get(name) != to_plain(config[name])]
    return normalized, adjusted


def _entries_for(spec) -> list:
    keys = {k for shape in spec.shapes for k in shape}
    entries = []
    for dtype in sorted(set(spec.dtypes) | set(KERNEL_DTYPES), key=str):
        for shape, overrides, rule in representative_points(keys, spec.name, dtype):
            spec.kernel.reset()
            bound = spec.kernel.bind(spec.make_inputs(shape, dtype, "meta", 0))
            config, adjusted = heuristic_config(bound.config_spec, overrides)
            specialization = to_plain(bound.specialization_key())
            entry = {"op": spec.name, "dtype": str(dtype).removeprefix("torch."), "shape": shape,
                     "rule": rule, "specialization": specialization, "config": config,
                     "variant": variant_id(spec.name, config, specialization)}
            if adjusted:
                entry["adjusted"] = adjusted
            entries.append(entry)
    return entries


CHECK_SIZE = 37
CHECK_SMALL = 3


def _flat(value) -> list:
    return [t for item in value for t in _flat(item)] if isinstance(value, (tuple, list)) else [value]


def check_op(spec) -> str | None:
    """Run the op once under the Triton interpreter (float32) at a small shape with its default
    config and compare with its float64 reference; the failure text, or None when it agrees."""
    dtype = torch.float32
    sizes = {k: v for k, v in spec.shapes[0].items()
             if k not in spec.exact_keys and isinstance(v, int) and not isinstance(v, bool)}
    largest = sorted(sizes, key=lambda k: (sizes[k], k))[-2:]
    shape = {**spec.shapes[0], **{k: min(v, CHECK_SIZE if k in largest else CHECK_SMALL) for k, v in sizes.items()}}
    args = spec.make_inputs(shape, dtype, "cpu", 1)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    outputs = _flat(bound.compile_config(bound.config_spec.default_config())(*args))
    expected = _flat(spec.reference(*args))
    rtol, atol = spec.tolerance(dtype)
    for index, (got, want) in enumerate(zip(outputs, expected)):
        try:
            torch.testing.assert_close(got.double(), want.double(), rtol=rtol, atol=atol)
        except AssertionError as error:
            return f"output {index} differs from the reference at {shape}: {str(error).splitlines()[2:4]}"
    return None


def build_table() -> dict:
    """The default table. Ops the DSL cannot bind, or whose default-config kernel disagrees with the
    reference under the interpreter, are listed under "unavailable" (the runtime then runs PyTorch)."""
    from build_tools.dsl import exc

    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("the default table checks kernels under the Triton interpreter: "
                           "set TRITON_INTERPRET=1 before triton is imported")
    entries, unavailable = [], {}
    for specs in op_families().values():
        for spec in specs:
            try:
                problem = check_op(spec)
                if problem is None:
                    entries += _entries_for(spec)
            except exc.Base as error:
                problem = f"{type(error).__name__}: {error}"
            if problem is not None:
                unavailable[spec.name] = problem
                print(f"warning: {spec.name} left out of the default table: {problem}", file=sys.stderr)
    return {"schema": 1, "arch": "default", "device_name": None,
            "generated_by": "python -m build_tools default-table (rules: build_tools/default_table.py)",
            "unavailable": unavailable, "entries": entries}


def render(table: dict) -> str:
    return json.dumps(table, indent=1) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools default-table", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if default.json is stale")
    parser.add_argument("--out", type=Path, default=DEFAULT_PATH)
    args = parser.parse_args(argv)
    text = render(build_table())
    if args.check:
        if not args.out.is_file() or args.out.read_text() != text:
            print(f"{args.out} is stale (run `python -m build_tools default-table`)", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out} ({text.count(chr(10))} lines)")
    return 0
