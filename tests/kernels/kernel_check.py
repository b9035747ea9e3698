"""Test helpers for the DSL kernels: configs to try, poisoned output allocation, float64 comparison.

Every kernel test runs an op under its default config and a few random configs
(`config_spec.random_config(seed)`), with every `torch.empty*` allocation made during the call
filled with NaN (floats) or -1 (integers) so that elements a kernel never writes cannot pass.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import torch
from triton.runtime.errors import OutOfResources, PTXASError

from build_tools.opspec import dtypes_from_key
from tests.dsl._harness import runnable_backends

TABLES = Path(__file__).resolve().parents[2] / "tuned_configs"
RANDOM_CONFIG_SEEDS = (11, 23)
# Under the CPU interpreter, which runs programs one by one, random configs keep to 8 tiles per dimension.
RANDOM_MAX_TILES = 8 if os.environ.get("HK_TEST_DEVICE", "cpu") == "cpu" else None


def shipped_entries(ops=None) -> list:
    """Every entry of `ops` (of every op when None) in every tuned table (tuned_configs/*.json)."""
    from helion_kernels._tables import load_table

    return [e for path in sorted(TABLES.glob("*.json")) for entries in load_table(path).entries.values()
            for e in entries if ops is None or e.op in ops]


def variants_of(entries: list, twins: bool = False) -> list:
    """The distinct (op, dtype, variant, None) that `entries` run (their dynamic twins too where
    `twins`), and (op, dtype, variant, key) for each set of other argument dtypes their op's
    OpSpec.dtype_variants lists for their dtype: the entry's config compiled for them, with its
    `dtype_configs` for the key (`Entry.dtype_variant`; the key as `_variant.dtypes_key` writes it)."""
    import kernels_src
    from helion_kernels._variant import dtypes_key

    specs = {spec.name: spec for spec in kernels_src.ALL_OPS}
    found = set()
    for e in entries:
        for twin in (False, True) if twins and e.twin else (False,):
            found.add((e.op, e.dtype, e.twin if twin else e.variant, None))
            for dtypes in specs[e.op].dtype_variants.get(getattr(torch, e.dtype), ()):
                key = dtypes_key(dtypes)
                found.add((e.op, e.dtype, e.dtype_variant(key, twin), key))
    return sorted(found, key=lambda row: (*row[:3], row[3] or ""))


def shipped_inputs(spec, shape: dict, dtype: str, dtypes: str | None, device: str, seed: int) -> tuple:
    """(inputs of `spec` at (shape, dtype) with the arguments named in the key `dtypes` in theirs,
    the tolerance: of the output dtype argument's dtype where the key sets one, else of `dtype`)."""
    args = spec.make_inputs(shape, getattr(torch, dtype), device, seed)
    if dtypes is None:
        return args, spec.tolerance(getattr(torch, dtype))
    overrides = dtypes_from_key(dtypes)
    names = list(spec.kernel.signature.parameters)
    outputs = [d for arg, d in overrides.items() if isinstance(args[names.index(arg)], torch.dtype)]
    return spec.with_dtypes(tuple(args), overrides), spec.tolerance(outputs[0] if outputs else getattr(torch, dtype))


def check_shipped_variant(op: str, dtype: str, variant: str, dtypes: str | None, shape: dict, device: str,
                          seed: int) -> None:
    """Run a shipped variant's generated launcher at `shape` (poisoned output allocations) and compare
    its outputs, in PyTorch's dtypes, with the op's float64 reference."""
    import kernels_src
    from helion_kernels._dispatch import DISPATCHER

    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    args, tolerance = shipped_inputs(spec, shape, dtype, dtypes, device, seed)
    with poisoned_allocations():
        outputs = DISPATCHER.registry.launchers(op)[variant](*args)
    assert_dtypes_of_baseline(spec, args, outputs, f"{op} {variant}")
    assert_close(outputs, spec.reference(*args), tolerance, f"{op} {variant} {shape}")


def configs_to_try(bound, seeds=RANDOM_CONFIG_SEEDS, extra=()) -> list[tuple[str, object]]:
    """(label, config) pairs: the default config, random configs for `seeds` (RANDOM_MAX_TILES),
    then `extra`."""
    spec = bound.config_spec
    configs = [("default", spec.default_config())]
    backends = runnable_backends(bound)
    configs += [(f"random_config({seed})", spec.random_config(seed, max_tiles=RANDOM_MAX_TILES, backends=backends))
                for seed in seeds]
    return configs + list(extra)


def a_few_chunks(knob):
    """A block/chunk choice about a quarter of the largest offered (choices reach the dimension's
    size), so loops over that dimension take a few iterations, not one and not thousands."""
    chunks = sorted(choice for choice in knob.choices if choice is not None)
    return chunks[max(len(chunks) - 3, 0)] if chunks else None


def config_with(label: str, overrides: dict):
    """A config maker: the default config with knobs replaced. `overrides` maps (knob name, index)
    to a value, or to a callable knob -> value or None (None keeps the default; index None: scalar
    fields, or every index)."""
    def make(bound) -> tuple[str, object]:
        spec = bound.config_spec
        values = spec.flatten(spec.default_config())
        applied = set()
        for position, knob in enumerate(spec.knobs()):
            for (name, index), value in overrides.items():
                if knob.name == name and index in (None, knob.index):
                    chosen = value(knob) if callable(value) else value
                    values[position] = values[position] if chosen is None else chosen
                    applied.add((name, index))
        assert applied == set(overrides), f"knobs not offered by the kernel: {set(overrides) - applied}"
        return label, spec.normalize(spec.unflatten(values))
    return make


looped_reduction = config_with("looped reduction", {("reduction_loops", None): a_few_chunks})


def _poison(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_floating_point():
        tensor.fill_(float("nan"))
    elif tensor.dtype != torch.bool:
        tensor.fill_(-1)
    return tensor


@contextlib.contextmanager
def poisoned_allocations():
    """Within the block, torch.empty/empty_like/new_empty return poisoned (NaN or -1) tensors."""
    empty, empty_like, new_empty = torch.empty, torch.empty_like, torch.Tensor.new_empty
    torch.empty = lambda *args, **kwargs: _poison(empty(*args, **kwargs))
    torch.empty_like = lambda *args, **kwargs: _poison(empty_like(*args, **kwargs))
    torch.Tensor.new_empty = lambda self, *args, **kwargs: _poison(new_empty(self, *args, **kwargs))
    try:
        yield
    finally:
        torch.empty, torch.empty_like, torch.Tensor.new_empty = empty, empty_like, new_empty


def run_config(bound, config, args):
    """Compile `bound` for `config` and run it on `args` with poisoned output allocations."""
    compiled = bound.compile_config(config)
    with poisoned_allocations():
        return compiled(*args)


def as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def assert_close(actual, expected, tolerance: tuple[float, float], label: str) -> None:
    """Compare each output (in float64) with its float64 reference under (rtol, atol)."""
    rtol, atol = tolerance
    actual, expected = as_tuple(actual), as_tuple(expected)
    assert len(actual) == len(expected), f"{label}: {len(actual)} outputs, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape, f"{label} output {index}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        torch.testing.assert_close(got.to(torch.float64), want.to(got.device, torch.float64), rtol=rtol, atol=atol,
                                   msg=lambda text, i=index: f"{label} output {i}: {text}")


def assert_dtypes_of_baseline(spec, args, outputs, label: str) -> None:
    """The outputs' dtypes are those of the op's PyTorch baseline on the same arguments."""
    got = tuple(output.dtype for output in as_tuple(outputs))
    expected = tuple(output.dtype for output in as_tuple(spec.baseline(*args)))
    assert got == expected, f"{label}: output dtypes {got}, PyTorch's {expected}"


def _warp_specialization_abort(config, error) -> bool:
    """Triton 3.6 aborts compiling many warp-specialized loops on sm_90 (its pass manager fails in
    WSDataPartition, "Unexpected op"; notes/tuner_h200_full.md): the tuner counts such a config as
    failed, and no table ships one."""
    return any(config.get("range_warp_specializes") or ()) and "PassManager::run failed" in str(error)


def check_op(kernel, args, reference_outputs, tolerance, label: str, extra_configs=(), output_dtypes=None,
             random_seeds=RANDOM_CONFIG_SEEDS) -> None:
    """Run `kernel` on `args` under the default config, random configs for `random_seeds` and one
    config per maker in `extra_configs` (callables bound -> (label, config)), comparing every output
    with the reference; `output_dtypes` checks the outputs' dtypes too. On a GPU a random config may
    not fit the device (OutOfResources: too much shared memory; or ptxas cannot allocate its
    registers, error C7600, e.g. 2 warps holding a 128x128 fp32 accumulator; or Triton 3.6 aborts on
    its warp-specialized loop); it is passed over, the others not."""
    kernel.reset()  # the config space follows the first binding's sizes: bind afresh for these sizes
    bound = kernel.bind(args)
    for config_label, config in configs_to_try(bound, random_seeds, [make(bound) for make in extra_configs]):
        try:
            outputs = as_tuple(run_config(bound, config, args))
        except (OutOfResources, PTXASError, RuntimeError) as error:
            if config_label.startswith("random_config") and (
                    isinstance(error, OutOfResources) or "C7600" in str(error) or _warp_specialization_abort(config, error)):
                continue
            raise
        if output_dtypes is not None:
            got_dtypes = tuple(output.dtype for output in outputs)
            assert got_dtypes == tuple(output_dtypes), f"{label} [{config_label}]: dtypes {got_dtypes}"
        assert_close(outputs, reference_outputs, tolerance, f"{label} [{config_label}: {dict(config)}]")
