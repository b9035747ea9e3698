"""Random numbers in device code (build_tools/dsl/rng.py): torch.rand_like / randn_like / rand /
randn with a seed the launcher draws per launch from torch's default generator, and Helion's
seeded hl.rand / hl.randint. Statistical checks use fixed torch seeds and bounds of several sigma;
every kernel runs under its default and random configs (block sizes change the tiling, which the
offsets must not depend on for uniqueness)."""
from __future__ import annotations

import math

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.replayable import replayable

from ._harness import DEVICE, RANDOM_CONFIGS, SEED_OFFSET, configs_to_run, randn


def each_config(kernel, args):
    """(label, compiled callable) for the default and random configs of `kernel` bound to `args`."""
    bound = kernel.bind(tuple(args))
    for label, config in configs_to_run(bound, RANDOM_CONFIGS, SEED_OFFSET):
        yield f"{label} {dict(config)}", bound.compile_config(config)


@helion.kernel()
def dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        x_val = x[tile]
        keep = torch.rand_like(x_val) > p
        out[tile] = torch.where(keep, x_val / (1 - p), torch.zeros_like(x_val))
    return out


@pytest.mark.parametrize("n", [1, 37, 3001])
def test_dropout_keeps_scaled_values_and_drops_about_p(n):
    p = 0.3
    x = randn(n) + 10.0  # never 0: a zero output is a dropped element
    for label, fn in each_config(dropout, (x, p)):
        torch.manual_seed(n)
        out = fn(x, p).cpu()
        dropped = out == 0
        kept = ~dropped
        torch.testing.assert_close(out[kept], (x.cpu() / (1 - p))[kept], rtol=1e-6, atol=0, msg=label)
        if n > 1000:
            sigma = math.sqrt(p * (1 - p) / n)
            assert abs(dropped.float().mean().item() - p) < 4 * sigma, label


def test_manual_seed_reproduces_and_consecutive_calls_differ():
    x = randn(1001) + 10.0
    for label, fn in each_config(dropout, (x, 0.5)):
        torch.manual_seed(1234)
        first, second = fn(x, 0.5), fn(x, 0.5)
        torch.manual_seed(1234)
        again = fn(x, 0.5)
        assert torch.equal(first, again), label
        assert not torch.equal(first, second), label


@helion.kernel()
def dropout_bf16(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    m, n = x.size()
    u = torch.empty_like(x)
    h = torch.empty([m, n], dtype=torch.float16, device=x.device)
    z = torch.empty([m, n], dtype=torch.float64, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        v = x[tile_m, tile_n]
        u[tile_m, tile_n] = torch.rand_like(v)
        h[tile_m, tile_n] = torch.rand_like(v, dtype=torch.float16)
        z[tile_m, tile_n] = torch.randn_like(v, dtype=torch.float64)
    return u, h, z


def test_low_precision_and_double_values():
    x = randn(61, 67, dtype=torch.bfloat16)
    for label, fn in each_config(dropout_bf16, (x,)):
        torch.manual_seed(7)
        u, h, z = fn(x)
        assert (u.dtype, h.dtype, z.dtype) == (torch.bfloat16, torch.float16, torch.float64), label
        for values in (u, h):
            assert values.min() >= 0 and values.max() < 1, label  # rounding never reaches 1.0
            assert abs(values.float().mean().item() - 0.5) < 0.03, label
        assert abs(z.mean().item()) < 0.06 and abs(z.std().item() - 1) < 0.06, label


@helion.kernel()
def two_draws(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.empty_like(x)
    b = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        v = x[tile]
        a[tile] = torch.rand_like(v)
        b[tile] = torch.rand_like(v)
    return a, b


def test_two_calls_in_one_kernel_are_independent():
    x = randn(2000)
    for label, fn in each_config(two_draws, (x,)):
        torch.manual_seed(3)
        a, b = fn(x)
        assert not torch.equal(a, b), label
        assert (a == b).sum() < 5, label
        corr = torch.corrcoef(torch.stack([a, b]).double())[0, 1].item()
        assert abs(corr) < 4 / math.sqrt(2000), label


def distinct(a: torch.Tensor, b: torch.Tensor) -> int:
    """The number of distinct (a, b) pairs of two draws at the same elements: pairs of two
    independent streams only repeat where an offset does (single float32 values repeat by chance)."""
    return torch.unique(torch.stack([a.flatten(), b.flatten()], dim=1).cpu(), dim=0).shape[0]


@helion.kernel()
def grid_noise(x: torch.Tensor, k: int) -> tuple[torch.Tensor, ...]:
    m, n = x.size()
    a = torch.empty([m, n, k], dtype=torch.float32, device=x.device)
    a2 = torch.empty([m, n, k], dtype=torch.float32, device=x.device)
    b = torch.empty([k, m, n], dtype=torch.float32, device=x.device)
    b2 = torch.empty([k, m, n], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        for tile_k in hl.tile(k):  # the value spans every loop dimension
            a[tile_m, tile_n, tile_k] = torch.rand([tile_m, tile_n, tile_k], device=x.device)
            a2[tile_m, tile_n, tile_k] = torch.rand(tile_m, tile_n, tile_k, device=x.device)
        for kk in hl.grid(k):  # the value lacks the inner loop's dimension
            v = x[tile_m, tile_n]
            b[kk, tile_m, tile_n] = torch.rand_like(v)
            b2[kk, tile_m, tile_n] = torch.rand_like(v)
    return a, a2, b, b2


def test_offsets_are_unique_over_a_tile_grid_and_inner_loops():
    x = randn(13, 11)
    k = 5
    for label, fn in each_config(grid_noise, (x, k)):
        torch.manual_seed(11)
        a, a2, b, b2 = fn(x, k)
        assert distinct(a, a2) == a.numel(), label
        assert distinct(b, b2) == b.numel(), label
        assert a.min() >= 0 and a.max() < 1 and b.min() >= 0 and b.max() < 1, label


@helion.kernel()
def normal_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    out = torch.empty_like(x)
    sums = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        r = torch.randn_like(x[tile_m, :])  # a whole dim (looped under reduction_loops)
        out[tile_m, :] = r
        sums[tile_m] = r.sum(-1)
    return out, sums


def test_randn_over_whole_dims_is_standard_normal():
    x = randn(97, 211)
    for label, fn in each_config(normal_rows, (x,)):
        torch.manual_seed(5)
        out, sums = fn(x)
        n = out.numel()
        assert abs(out.mean().item()) < 4 / math.sqrt(n), label
        assert abs(out.std().item() - 1) < 4 * math.sqrt(2 / n), label
        # a value recomputed chunk by chunk (reduction_loops) is the same each time
        torch.testing.assert_close(sums, out.sum(-1), rtol=1e-4, atol=1e-4, msg=label)


@helion.kernel()
def seeded(x: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    m, n = x.size()
    u = torch.empty([m, n], dtype=torch.float32, device=x.device)
    i = torch.empty([m, n], dtype=torch.int32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        u[tile_m, tile_n] = hl.rand([tile_m, tile_n], seed=seed)
        i[tile_m, tile_n] = hl.randint([tile_m, tile_n], low=-3, high=7, seed=seed)
    return u, i


@helion.kernel()
def seeded_by_tensor(x: torch.Tensor, seed: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    u = torch.empty([m, n], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        u[tile_m, tile_n] = hl.rand([tile_m, tile_n], seed)
    return u


def test_hl_rand_is_a_function_of_its_seed():
    x = randn(45, 77)
    reference = None
    for label, fn in each_config(seeded, (x, 42)):
        u, i = fn(x, 42)
        again, _ = fn(x, 42)
        other, _ = fn(x, 1337)
        assert torch.equal(u, again) and not torch.equal(u, other), label
        assert u.min() >= 0 and u.max() < 1 and abs(u.mean().item() - 0.5) < 0.03, label
        assert i.min() == -3 and i.max() == 6, label
        counts = torch.bincount((i + 3).flatten().long().cpu(), minlength=10).float()
        assert (counts - i.numel() / 10).abs().max() < 5 * math.sqrt(i.numel() / 10), label
        # the offsets are the elements' linear indices whatever the tiling
        reference = u if reference is None else reference
        assert torch.equal(u, reference), label
    by_tensor = seeded_by_tensor(x, torch.tensor([42], device=DEVICE))
    assert torch.equal(by_tensor, reference)


@pytest.mark.skipif(DEVICE == "cuda", reason="on CUDA the native launch keys launches in C; this reads the Python "
                    "launch path's key, which the interpreter and any non-native launch take")
def test_a_fresh_seed_keeps_the_launch_cache_key():
    """The seed travels as two floats: the launch paths key their kept launches on each int
    argument's value (launch_helpers._launch_key), which a new int seed per call would miss."""
    x = randn(100)
    bound = dropout.bind((x, 0.1))
    fn = bound.compile_config(bound.config_spec.default_config())
    module = fn.__globals__
    keys = []
    launch = module["_launch"]

    def recording(kernel, grid, args, constants, num_warps, num_stages):
        keys.append(module["_launch_key"](0, args, constants, num_warps, num_stages))
        return launch(kernel, grid, args, constants, num_warps, num_stages)

    module["_launch"] = recording
    try:
        first, second = fn(x, 0.1), fn(x, 0.1)
    finally:
        module["_launch"] = launch
    assert not torch.equal(first, second)
    assert len(keys) == 2 and keys[0] == keys[1]


def test_a_launcher_that_draws_a_seed_is_not_replayable():
    x = randn(100)
    bound = dropout.bind((x, 0.1))
    launcher = bound.generate(bound.config_spec.default_config(), "dropout").launcher
    assert "_rng_seed()" in launcher
    assert not replayable(launcher)
    # the same kernel with a seed argument draws none and stays replayable
    bound = seeded.bind((randn(4, 4), 1))
    launcher = bound.generate(bound.config_spec.default_config(), "seeded").launcher
    assert "_rng_seed" not in launcher and replayable(launcher)


def test_a_launch_over_an_empty_grid_draws_no_seed():
    x = randn(0)
    bound = dropout.bind((x, 0.1))
    launcher = bound.generate(bound.config_spec.default_config(), "dropout").launcher
    assert "_rng_seed" not in launcher  # dropped with the launch that read it
    assert dropout(x, 0.1).numel() == 0


@helion.kernel()
def with_generator(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.rand_like(x[tile], generator=torch.default_generator)
    return out


@helion.kernel()
def integer_rand(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.rand_like(x[tile], dtype=torch.int32)
    return out


@helion.kernel()
def rand_of_ints(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = torch.randn_like(x[tile])
    return out


@helion.kernel()
def float_seed(x: torch.Tensor, seed: float) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        out[tile] = hl.rand([tile], seed)
    return out


@pytest.mark.parametrize("kernel, args, message", [
    (with_generator, (randn(8),), "generator"),
    (integer_rand, (randn(8),), "dtype torch.int32"),
    (rand_of_ints, (torch.arange(8, device=DEVICE),), "dtype torch.int64"),
    (float_seed, (randn(8), 1.5), "seed is an integer"),
])
def test_unsupported_arguments(kernel, args, message):
    with pytest.raises(helion.exc.NotSupported, match=message):
        kernel(*args)
