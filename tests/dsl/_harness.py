"""Shared runner for the DSL corpus: runs a kernel under its default and random configs and compares.

Every run gets fresh copies of the arguments; arguments named as outputs are poisoned first, and
tensors the kernel allocates on the host (torch.empty / empty_like / new_empty) are poisoned too, so
elements the kernel forgot to write show up as NaN (or an integer sentinel) in the comparison.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tokenize
from typing import Callable, Iterable, Sequence

import torch

DEVICE = os.environ.get("HK_TEST_DEVICE", "cpu")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Deeper sweeps on demand: HK_DSL_RANDOM_CONFIGS=20 HK_DSL_SEED_OFFSET=1000 pytest tests/dsl
RANDOM_CONFIGS = int(os.environ.get("HK_DSL_RANDOM_CONFIGS", "3"))
SEED_OFFSET = int(os.environ.get("HK_DSL_SEED_OFFSET", "0"))
# Triton's interpreter runs every program and loop step in turn, and random blocks of 1-4 over
# dimensions of hundreds took most of the suite's time: on the CPU, random configs cut each
# dimension into at most 8 tiles (ConfigSpec.random_config's max_tiles).
RANDOM_MAX_TILES = 8 if DEVICE == "cpu" else None

DEFAULT_TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


def randn(*shape, dtype=torch.float32, device=DEVICE) -> torch.Tensor:
    """Fresh standard-normal values (never all zeros)."""
    return torch.randn(*shape, dtype=torch.float32).to(dtype=dtype, device=device)


def rand_positive(*shape, dtype=torch.float32, device=DEVICE) -> torch.Tensor:
    """Fresh values in [0.5, 1.5), for logs, roots and well-conditioned long sums."""
    return (torch.rand(*shape, dtype=torch.float32) + 0.5).to(dtype=dtype, device=device)


def randint(low: int, high: int, *shape, device=DEVICE) -> torch.Tensor:
    return torch.randint(low, high, shape, dtype=torch.int64).to(device)


def poison_(tensor: torch.Tensor) -> torch.Tensor:
    """Fill a tensor with a value no correct kernel writes: NaN for floats, the dtype's max for ints."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        return tensor.fill_(float("nan"))
    if tensor.dtype == torch.bool:
        return tensor.fill_(True)
    return tensor.fill_(torch.iinfo(tensor.dtype).max)


@contextlib.contextmanager
def poisoned_allocations():
    """Make torch.empty, torch.empty_like and Tensor.new_empty return poisoned tensors."""
    originals = (torch.empty, torch.empty_like, torch.Tensor.new_empty)
    empty, empty_like, new_empty = originals

    def poisoned_empty(*args, **kwargs):
        return poison_(empty(*args, **kwargs))

    def poisoned_empty_like(*args, **kwargs):
        return poison_(empty_like(*args, **kwargs))

    def poisoned_new_empty(self, *args, **kwargs):
        return poison_(new_empty(self, *args, **kwargs))

    torch.empty, torch.empty_like, torch.Tensor.new_empty = (
        poisoned_empty, poisoned_empty_like, poisoned_new_empty)
    try:
        yield
    finally:
        torch.empty, torch.empty_like, torch.Tensor.new_empty = originals


NAN_STAND_IN = 12345.0  # assert_close takes NaN for unequal: `without_nan` compares it as this value


def without_nan(*values: torch.Tensor) -> tuple:
    """`values` with NaN as NAN_STAND_IN (floats as float64), for comparing outputs where NaN is due."""
    return tuple(v.double().nan_to_num(nan=NAN_STAND_IN, posinf=float("inf"), neginf=float("-inf"))
                 if v.dtype.is_floating_point else v for v in values)


def as_float64(value):
    """Reference-side copy of an argument: floating tensors become float64 on the CPU."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.double() if value.dtype.is_floating_point else value.clone()
    return value


def fresh_args(args: Sequence, poison: Iterable[int]) -> list:
    copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    for index in poison:
        poison_(copies[index])
    return copies


def _as_tuple(value) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def tolerance_for(dtype: torch.dtype) -> tuple[float, float]:
    return DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))


def compare(actual, expected, *, rtol=None, atol=None, label="") -> None:
    """Compare kernel outputs with float64 reference outputs, one pair at a time."""
    actual, expected = _as_tuple(actual), _as_tuple(expected)
    assert len(actual) == len(expected), f"{label}: {len(actual)} outputs, expected {len(expected)}"
    for position, (got, want) in enumerate(zip(actual, expected)):
        assert isinstance(got, torch.Tensor), f"{label}: output {position} is {type(got)}"
        want = torch.as_tensor(want).cpu()
        assert tuple(got.shape) == tuple(want.shape), (
            f"{label}: output {position} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
        default_rtol, default_atol = tolerance_for(got.dtype)
        got_cpu = got.detach().cpu()
        if got.dtype.is_floating_point:
            got_cpu, want = got_cpu.double(), want.double()
        else:
            want = want.to(got_cpu.dtype)
        torch.testing.assert_close(
            got_cpu, want,
            rtol=default_rtol if rtol is None else rtol,
            atol=default_atol if atol is None else atol,
            msg=lambda m, p=position: f"{label}: output {p}: {m}")


def config_with(config, **fields):
    """A copy of `config` (a helion.Config) with some fields replaced."""
    return type(config)(**{**dict(config), **fields})


def runnable_backends(bound) -> tuple:
    """The config back ends that run on the device of `bound`'s tensor arguments."""
    from build_tools.autotune.space import runnable_backends as on_device

    device = next((a.device for a in bound.arguments.values() if isinstance(a, torch.Tensor)), torch.device("cpu"))
    return on_device(str(device))


def configs_to_run(bound, n_random: int, seed_offset: int, extra_configs=(), overrides=()) -> list:
    """(label, config) pairs: default, n_random random configs (RANDOM_MAX_TILES), extra configs,
    then the default config with each dict of `overrides` applied."""
    spec = bound.config_spec
    default = spec.default_config()
    runs = [("default", default)]
    backends = runnable_backends(bound)
    runs += [(f"random seed {seed}", spec.random_config(seed, max_tiles=RANDOM_MAX_TILES, backends=backends))
             for seed in range(seed_offset, seed_offset + n_random)]
    runs += [(f"explicit {i}", config) for i, config in enumerate(extra_configs)]
    runs += [(f"default with {fields}", config_with(default, **fields)) for fields in overrides]
    return runs


def check_kernel(
    kernel,
    args: Sequence,
    reference: Callable,
    *,
    poison: Iterable[int] = (),
    outputs: Callable | None = None,
    n_random: int | None = None,
    seed_offset: int | None = None,
    extra_configs: Sequence = (),
    overrides: Sequence[dict] = (),
    rtol: float | None = None,
    atol: float | None = None,
    reference_takes_config: bool = False,
) -> list:
    """Run `kernel` on `args` under the configs of `configs_to_run` and compare with `reference`.

    `reference` receives float64 CPU copies of the original arguments (and `config=` when
    `reference_takes_config`). `outputs(result, run_args)` picks what to compare; by default the
    kernel's return value. `n_random`/`seed_offset` default to HK_DSL_RANDOM_CONFIGS (3) and
    HK_DSL_SEED_OFFSET (0). Returns the configs that ran.
    """
    poison = tuple(poison)
    n_random = RANDOM_CONFIGS if n_random is None else n_random
    seed_offset = SEED_OFFSET if seed_offset is None else seed_offset
    bound = kernel.bind(tuple(args))
    ran = []
    for label, config in configs_to_run(bound, n_random, seed_offset, extra_configs, overrides):
        run_args = fresh_args(args, poison)
        with poisoned_allocations():
            result = bound.compile_config(config)(*run_args)
        actual = result if outputs is None else outputs(result, run_args)
        ref_args = [as_float64(a) for a in args]
        expected = (reference(*ref_args, config=config) if reference_takes_config
                    else reference(*ref_args))
        compare(actual, expected, rtol=rtol, atol=atol, label=f"{label} {dict(config)}")
        ran.append(config)
    return ran


def code_without_comments(source: str) -> str:
    """Generated Python source with comments removed (they may quote the DSL program)."""
    tokens = [tok for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type != tokenize.COMMENT]
    return tokenize.untokenize(tokens)


def results_without_interpreter(module: str, timeout: float):
    """The JSON that `python -m module` prints last, run without TRITON_INTERPRET (real Triton
    compiles, e.g. cross-compiling for sm_90 on a machine without a GPU)."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "HK_TEST_DEVICE": "cpu"}
    done = subprocess.run([sys.executable, "-m", module], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])
