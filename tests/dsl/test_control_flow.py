"""Corpus: device control flow (compile-time `if` on constexprs, run-time `if` on tile scalars, loop-carried
variables) and host helpers (hl.specialize, hl.constexpr, hl.register_tunable with each fragment)."""
import ast
import re

import pytest
import torch
import triton

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.replayable import replayable

from ._harness import check_kernel, code_without_comments, randn


@helion.kernel()
def activation(x: torch.Tensor, kind: hl.constexpr, add_one: hl.constexpr) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        values = x[tile]
        if kind == "relu":
            values = torch.where(values > 0, values, 0.0)
        elif kind == "tanh":
            values = torch.tanh(values)
        else:
            values = values * torch.sigmoid(values)
        if add_one:
            values = values + 1.0
        out[tile] = values
    return out


def _activation_reference(x, kind, add_one):
    result = {"relu": torch.relu, "tanh": torch.tanh, "silu": lambda v: v * torch.sigmoid(v)}[kind](x)
    return result + 1.0 if add_one else result


@pytest.mark.parametrize("kind", ["relu", "tanh", "silu"])
@pytest.mark.parametrize("add_one", [False, True])
def test_constexpr_if(kind, add_one, device):
    x = randn(5, 17, device=device)
    check_kernel(activation, (x, kind, add_one), _activation_reference)


def test_constexpr_if_is_resolved_at_compile_time(device):
    x = randn(16, device=device)
    bound = activation.bind((x, "relu", False))
    code = code_without_comments(bound.to_triton_code(bound.config_spec.default_config()))
    assert "tanh" not in code and "sigmoid" not in code
    assert bound is not activation.bind((x, "tanh", False))


@helion.kernel()
def matmul_bias_on_first_k(x: torch.Tensor, y: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = y.size(1)
    out = torch.empty([m, n], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            if tile_k.begin == 0:
                acc = acc + bias[None, tile_n]
            acc = acc + torch.mm(x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (20, 70, 18)])
def test_if_on_tile_begin(m, k, n, device):
    x, y, bias = randn(m, k, device=device), randn(k, n, device=device), randn(n, device=device)
    tolerance = {} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(matmul_bias_on_first_k, (x, y, bias), lambda x, y, b: x @ y + b, **tolerance)


@helion.kernel()
def alternate_tiles(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        if tile.id % 2 == 0:
            out[tile] = x[tile] * 2.0
        else:
            out[tile] = x[tile] * -3.0
    return out


@pytest.mark.parametrize("n", [1, 100])
def test_if_on_tile_id(n, device):
    def reference(x, config):
        even = (torch.arange(x.numel()) // config["block_sizes"][0]) % 2 == 0
        return torch.where(even, x * 2.0, x * -3.0)

    check_kernel(alternate_tiles, (randn(n, device=device),), reference, reference_takes_config=True)


@helion.kernel()
def clip_rows_after(x: torch.Tensor, first_clipped: int) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for row in hl.grid(m):
        for tile_n in hl.tile(n):
            values = x[row, tile_n]
            if row >= first_clipped:
                values = torch.clamp(values, -0.5, 0.5)
            out[row, tile_n] = values
    return out


@pytest.mark.parametrize("shape,first", [((1, 1), 0), ((6, 40), 3)])
def test_if_on_grid_index_with_carried_value(shape, first, device):
    def reference(x, first):
        expected = x.clone()
        expected[first:] = x[first:].clamp(-0.5, 0.5)
        return expected

    check_kernel(clip_rows_after, (randn(*shape, device=device), first), reference)


@helion.kernel()
def row_sums_and_shifted_rows(x: torch.Tensor, first_shifted: int):
    """`values` names a value of the first column loop, then, in a branch, the values of a second
    one: the branch must not carry the first loop's value, which Triton drops at that loop's end."""
    m, n = x.size()
    sums = torch.empty([m], dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    for row in hl.grid(m):
        total = hl.zeros([], dtype=torch.float32)
        for tile_n in hl.tile(n):
            values = x[row, tile_n].to(torch.float32)
            total = total + torch.sum(values, dim=0)
        sums[row] = total
        if row >= first_shifted:
            for tile_n in hl.tile(n):
                values = x[row, tile_n] + 1.0
                out[row, tile_n] = values
        else:
            for tile_n in hl.tile(n):
                out[row, tile_n] = x[row, tile_n]
    return sums, out


@pytest.mark.parametrize("shape,first", [((1, 1), 0), ((5, 300), 2)])
def test_a_name_reused_after_a_loop_is_not_carried_out_of_it(shape, first, device):
    def reference(x, first):
        shifted = x.clone()
        shifted[first:] += 1.0
        return x.sum(1), shifted

    check_kernel(row_sums_and_shifted_rows, (randn(*shape, device=device), first), reference, atol=1e-4)


@helion.kernel()
def recent_even_tile_sums(x: torch.Tensor) -> torch.Tensor:
    """Each column tile gets the row sums of the latest even-numbered column tile: `recent` is
    assigned only in a branch, so an odd tile reads the value the previous iteration left (the
    column loop must carry it although its body assigns it before reading it)."""
    m, n = x.size()
    out = torch.empty([m, n], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        recent = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            if tile_n.id % 2 == 0:
                recent = torch.sum(x[tile_m, tile_n], dim=1)
            out[tile_m, tile_n] = recent[:, None] + hl.zeros([tile_m, tile_n], dtype=torch.float32)
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 100)])
def test_a_value_assigned_in_a_branch_crosses_loop_iterations(shape, device):
    def reference(x, config):
        block = config["block_sizes"][1]
        even_tile_start = torch.arange(x.size(1)) // (2 * block) * (2 * block)
        sums = torch.stack([x[:, start:start + block].sum(1) for start in range(0, x.size(1), block)], dim=1)
        return sums[:, even_tile_start // block]

    check_kernel(recent_even_tile_sums, (randn(*shape, device=device),), reference, reference_takes_config=True,
                 extra_configs=[helion.Config(block_sizes=[4, 16])], atol=1e-4)


@helion.kernel()
def doubled_row_sums(x: torch.Tensor, doubled: hl.constexpr) -> torch.Tensor:
    """`twice` is assigned and read only under the compile-time `doubled`, which the liveness of
    the column loop's names follows: `twice` is assigned before it is read on the one path there
    is, so the loop (and, peeled, its tail loop) does not carry it out of an iteration."""
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        total = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            sums = torch.sum(x[tile_m, tile_n], dim=1)
            if doubled:
                twice = sums * 2.0
            total = total + sums
            if doubled:
                total = total + twice
        out[tile_m] = total
    return out


@pytest.mark.parametrize("doubled", [False, True])
def test_names_under_compile_time_conditions_are_not_carried(doubled, device):
    x = randn(5, 100, device=device)
    config = helion.Config(block_sizes=[4, 16], range_peel_tails=[True])
    check_kernel(doubled_row_sums, (x, doubled), lambda x, doubled: x.double().sum(1) * (3 if doubled else 1),
                 extra_configs=[config], atol=1e-3, rtol=1e-5)
    code = doubled_row_sums.bind((x, doubled)).to_triton_code(config)
    assert not re.search(r"\btwice_\d+ = ", code), code


@helion.kernel()
def halved_on_odd_tiles(x: torch.Tensor) -> torch.Tensor:
    """`factor = total` names the loop-carried `total`'s value; a branch then reassigns both. Each
    needs a variable of its own: `factor` must not overwrite `total`'s, and `total`'s new value must
    reach past the branch (as the online softmax's lazy rescale does with its row sum)."""
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        total = hl.full([tile_m], 1.0, dtype=torch.float32)
        for tile_n in hl.tile(n):
            factor = total
            if tile_n.id % 2 == 1:
                factor = total * 0.5
                total = total * 0.25
            total = total + factor + torch.sum(x[tile_m, tile_n], dim=1)
        out[tile_m] = total
    return out


@pytest.mark.parametrize("shape", [(1, 1), (5, 100)])
def test_an_alias_of_a_carried_value_reassigned_in_a_branch(shape, device):
    def reference(x, config):
        block = config["block_sizes"][1]
        total = torch.ones(x.size(0), dtype=torch.float64)
        for i, start in enumerate(range(0, x.size(1), block)):
            factor = total
            if i % 2 == 1:
                factor, total = total * 0.5, total * 0.25
            total = total + factor + x[:, start:start + block].double().sum(1)
        return total

    check_kernel(halved_on_odd_tiles, (randn(*shape, device=device),), reference, reference_takes_config=True,
                 extra_configs=[helion.Config(block_sizes=[4, 16])], atol=1e-3, rtol=1e-5)


@helion.kernel()
def last_row(x: torch.Tensor) -> torch.Tensor:
    """`last` is assigned before it is read in the row loop (so not live into it) and read after
    the loop: the loop carries it out, and the result is the last row."""
    m, n = x.size()
    out = torch.empty([n], dtype=torch.float32, device=x.device)
    for tile_n in hl.tile(n):
        last = hl.zeros([tile_n], dtype=torch.float32)
        for row in hl.grid(m):
            last = x[row, tile_n].to(torch.float32) * 2.0
        out[tile_n] = last
    return out


@pytest.mark.parametrize("shape", [(1, 1), (6, 70)])
def test_a_value_assigned_in_a_loop_and_read_after_it_is_carried(shape, device):
    check_kernel(last_row, (randn(*shape, device=device),), lambda x: x[-1] * 2.0)


@helion.kernel()
def row_mean_and_variance(x: torch.Tensor):
    m, n = x.size()
    means = torch.empty([m], dtype=torch.float32, device=x.device)
    variances = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        total = hl.zeros([tile_m], dtype=torch.float32)
        total_sq = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            values = x[tile_m, tile_n].to(torch.float32)
            total, total_sq = total + values.sum(dim=1), total_sq + (values * values).sum(dim=1)
        mean = total / n
        means[tile_m] = mean
        variances[tile_m] = total_sq / n - mean * mean
    return means, variances


@pytest.mark.parametrize("shape", [(1, 1), (3, 130)])
def test_several_loop_carried_values(shape, device):
    x = randn(*shape, device=device)
    check_kernel(row_mean_and_variance, (x,), lambda x: (x.mean(1), x.var(1, unbiased=False)),
                 atol=1e-4)


@helion.kernel()
def positive_stats(x: torch.Tensor):
    m, n = x.size()
    counts = torch.empty([m], dtype=torch.float32, device=x.device)
    sums = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        count = hl.zeros([tile_m], dtype=torch.float32)
        total = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            values = x[tile_m, tile_n]
            positive = values > 0
            count = count + positive.to(torch.float32).sum(dim=1)
            total = total + torch.where(positive, values, 0.0).sum(dim=1)
        counts[tile_m] = count
        sums[tile_m] = total
    return counts, sums


@pytest.mark.parametrize("shape", [(1, 1), (4, 77)])
def test_reassigned_accumulators(shape, device):
    check_kernel(positive_stats, (randn(*shape, device=device),),
                 lambda x: ((x > 0).double().sum(1), x.clamp(min=0).sum(1)))


@helion.kernel()
def specialized_width(x: torch.Tensor) -> torch.Tensor:
    m = x.size(0)
    n = hl.specialize(x.size(1))
    inv_n = 1.0 / n
    out = torch.empty_like(x)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m, n], dtype=torch.float32)
        acc = acc + x[tile_m, :]
        if n > 8:
            acc = acc * 2.0
        out[tile_m, :] = acc - acc.sum(dim=1, keepdim=True) * inv_n
    return out


def _specialized_reference(x):
    scaled = x * 2.0 if x.size(1) > 8 else x
    return scaled - scaled.mean(1, keepdim=True)


@pytest.mark.parametrize("shape", [(1, 1), (5, 8), (7, 24)])
def test_specialize_and_constexpr_folding(shape, device):
    x = randn(*shape, device=device)
    check_kernel(specialized_width, (x,), _specialized_reference)
    bound = specialized_width.bind((x,))
    wider = specialized_width.bind((randn(3, shape[1] + 1, device=device),))
    assert bound.specialization_key() != wider.specialization_key()
    if shape[1] == 24:
        assert "24" in code_without_comments(bound.to_triton_code(bound.config_spec.default_config()))


@helion.kernel(static_shapes=False)
def specialized_contraction(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    k = hl.specialize(k)
    n = y.size(1)
    out = torch.empty([m, n], dtype=torch.float32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        rows = x[tile_m, :]
        out[tile_m, tile_n] = hl.dot(rows, y[:, tile_n]) + rows.sum(1)[:, None] / k
    return out


@pytest.mark.parametrize("k", [64, 40, 8])
def test_specialized_size_is_a_constant(k, device):
    """With dynamic shapes, an hl.specialize'd size is baked into the kernel: no mask at all when it
    is its own power-of-two block, a constant mask otherwise (and below the 16 a dot needs)."""
    x, y = randn(5, k, device=device), randn(k, 7, device=device)
    tolerance = {} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2}
    check_kernel(specialized_contraction, (x, y), lambda x, y: x @ y + x.sum(1)[:, None] / k, **tolerance)
    bound = specialized_contraction.bind((x, y))
    code = code_without_comments(bound.to_triton_code(bound.config_spec.default_config()))
    block = max(16, triton.next_power_of_2(k))
    launch = next(line for line in code.splitlines() if line.strip().startswith("_launch("))
    constants = re.search(r"\), \(([\d, ]+)\), \d+, \d+\)$", launch.strip()).group(1)
    assert "_RDIM_SIZE_0: tl.constexpr)" in code and int(constants.split(",")[-1]) == block
    assert "x_size_1" not in code  # not a run-time argument
    if k == block:
        assert "rmask" not in code
    else:
        assert f"rmask_0 = rindex_0 < {k}" in code


@helion.kernel(static_shapes=False)
def scaled_row_sums(x: torch.Tensor, times: int) -> torch.Tensor:
    times = hl.specialize(times)
    m = x.size(0)
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        out[tile_m] = x[tile_m, :].sum(1) * times
    return out


def test_specialized_scalar_does_not_fix_an_equal_size(device):
    """`times` is specialized, not x.size(1): a width that equals it at bind time stays a run-time size."""
    narrow, wide = randn(3, 16, device=device), randn(3, 24, device=device)
    assert scaled_row_sums.bind((narrow, 16)) is scaled_row_sums.bind((wide, 16))
    for x in (narrow, wide):
        check_kernel(scaled_row_sums, (x, 16), lambda x, times: x.sum(1) * times, n_random=1)


@helion.kernel(static_shapes=False)
def column_sums_doubled_for_one_row(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    halve = hl.register_tunable("halve", helion.EnumFragment((False, True)))
    single = m == 1
    out = torch.empty([n], dtype=torch.float32, device=x.device)
    for tile_n in hl.tile(n):
        acc = hl.zeros([tile_n], dtype=torch.float32)
        for tile_m in hl.tile(m):
            acc = acc + x[tile_m, tile_n].to(torch.float32).sum(0)
        if single:
            acc = acc * 2.0
        if halve and m > 1:
            acc = acc * 0.5
        out[tile_n] = acc
    return out


def _column_sums_reference(x, halve):
    sums = x.sum(0)
    return sums * 2.0 if x.size(0) == 1 else sums * (0.5 if halve else 1.0)


@pytest.mark.parametrize("constexpr", [False, True])
@pytest.mark.parametrize("halve", [False, True])
def test_a_condition_on_a_run_time_size_branches_at_run_time(halve, constexpr, device):
    """With dynamic shapes, `m == 1` in device code (held in a name, or in an `and`) follows each
    call: the kernel bound at one row must take the other branch on many rows (the example's value
    used to be folded into the kernel). The condition reaches the kernel as a flag the launcher
    computes per call: an argument, or with `constexpr_conditions` a constexpr (a Triton compile
    per value taken, each holding only its side of the branch). A compile-time operand that
    decides an `and` leaves no branch at all."""
    one_row, rows = randn(1, 37, device=device), randn(5, 37, device=device)
    bound = column_sums_doubled_for_one_row.bind((one_row,))
    config = {**bound.config_spec.default_config(), "halve": halve, "constexpr_conditions": constexpr}
    kernel = bound.compile_config(config)
    for x in (one_row, rows, one_row):
        torch.testing.assert_close(kernel(x.clone()).double().cpu(), _column_sums_reference(x.double().cpu(), halve),
                                   rtol=1e-5, atol=1e-5)
    code = code_without_comments(bound.to_triton_code(config))
    body = code[code.index("\ndef _column_sums_doubled_for_one_row"):code.index("\ndef column_sums_doubled_for_one_row(")]
    assert len(re.findall(r"^\s+if ", body, re.M)) == (2 if halve else 1)
    assert "0.5" in body if halve else "0.5" not in body
    signature = body[:body.index("):")]
    flags = [name for name in re.findall(r"\b(a_1_if_\w+)", signature)]
    assert len(flags) == (2 if halve else 1)
    assert all((f"{flag}: tl.constexpr" in signature) == constexpr for flag in flags)
    # the condition reaches the kernel as integer arithmetic: the launcher stays replayable
    launcher = next(node for node in ast.parse(code).body
                    if isinstance(node, ast.FunctionDef) and node.name == "column_sums_doubled_for_one_row")
    assert replayable(ast.unparse(launcher))


def test_constexpr_conditions_is_a_knob_only_where_a_run_time_condition_exists(device):
    """The knob comes last (earlier knobs' seeded draws unchanged), is offered where device code
    branches on a run-time host condition, and normalizes away where false or where none exists."""
    bound = column_sums_doubled_for_one_row.bind((randn(5, 37, device=device),))
    spec = bound.config_spec
    assert spec.knobs()[-1].name == "constexpr_conditions" and spec.knobs()[-1].choices == (False, True)
    default = spec.default_config()
    assert "constexpr_conditions" not in spec.normalize(helion.Config({**default, "constexpr_conditions": False}))
    values = spec.flatten(helion.Config({**default, "constexpr_conditions": True}))
    assert values[-1] is True and spec.unflatten(values)["constexpr_conditions"] is True
    with pytest.raises(helion.exc.InvalidConfig):
        spec.normalize(helion.Config({**default, "constexpr_conditions": 1}))
    plain = tunable_chunks.bind((randn(100, device=device),)).config_spec
    assert "constexpr_conditions" not in [knob.name for knob in plain.knobs()]
    assert "constexpr_conditions" not in plain.normalize(helion.Config({**plain.default_config(), "constexpr_conditions": True}))


@helion.kernel()
def tunable_chunks(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    chunk = hl.register_tunable("chunk", helion.PowerOfTwoFragment(16, 128))
    factor = hl.register_tunable("factor", helion.IntegerFragment(1, 5))
    use_exp2 = hl.register_tunable("use_exp2", helion.EnumFragment((False, True)))
    out = torch.empty_like(x)
    for tile in hl.tile(n, block_size=chunk):
        values = x[tile]
        if use_exp2:
            growth = torch.exp2(values * 1.4426950408889634)
        else:
            growth = torch.exp(values)
        out[tile] = growth * factor
    return out


@pytest.mark.parametrize("n", [1, 300])
def test_register_tunable_fragments(n, device):
    x = randn(n, device=device)
    configs = check_kernel(tunable_chunks, (x,), lambda x, config: torch.exp(x) * config["factor"],
                           reference_takes_config=True, n_random=4)
    for config in configs:
        assert config["chunk"] in (16, 32, 64, 128)
        assert config["factor"] in range(1, 6)
        assert config["use_exp2"] in (False, True)


def test_register_tunable_explicit_values(device):
    x = randn(50, device=device)
    bound = tunable_chunks.bind((x,))
    default = bound.config_spec.default_config()
    for chunk, factor, use_exp2 in [(16, 1, False), (128, 5, True), (32, 3, True)]:
        config = helion.Config(**{**dict(default), "chunk": chunk, "factor": factor, "use_exp2": use_exp2})
        result = bound.compile_config(config)(x.clone())
        torch.testing.assert_close(result.double().cpu(), torch.exp(x.double().cpu()) * factor,
                                   rtol=1e-4, atol=1e-4)


@helion.kernel()
def tunable_values(x: torch.Tensor) -> torch.Tensor:
    scale = hl.register_tunable("scale", helion.PowerOfTwoFragment(1, 8))
    offset = hl.register_tunable("offset", helion.IntegerFragment(0, 3))
    squash = hl.register_tunable("squash", helion.EnumFragment(("tanh", "sigmoid")))
    out = torch.empty_like(x)
    for tile in hl.tile(x.size(0)):
        values = x[tile] * scale + offset
        if squash == "tanh":
            values = torch.tanh(values)
        else:
            values = torch.sigmoid(values)
        out[tile] = values
    return out


def _tunable_values_reference(x, config):
    values = x * config["scale"] + config["offset"]
    return torch.tanh(values) if config["squash"] == "tanh" else torch.sigmoid(values)


@pytest.mark.parametrize("n", [1, 90])
def test_register_tunable_values_in_device_code(n, device):
    x = randn(n, device=device)
    configs = check_kernel(tunable_values, (x,), _tunable_values_reference,
                           reference_takes_config=True, n_random=6,
                           overrides=[{"scale": 8, "offset": 3, "squash": "sigmoid"}])
    assert {c["squash"] for c in configs} <= {"tanh", "sigmoid"}
    assert all(c["scale"] in (1, 2, 4, 8) and 0 <= c["offset"] <= 3 for c in configs)


@helion.kernel()
def cast_to(x: torch.Tensor, dtype: hl.constexpr) -> torch.Tensor:
    out = torch.empty(x.size(), dtype=dtype, device=x.device)
    for tile in hl.tile(x.size(0)):
        out[tile] = (x[tile] * 4.0).to(dtype)
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32])
def test_dtype_as_constexpr(dtype, device):
    x = randn(70, device=device)
    check_kernel(cast_to, (x, dtype), lambda x, dtype: (x * 4.0).float().to(dtype))
    assert cast_to(x, dtype).dtype == dtype


@helion.kernel()
def rows_kept_or_marked(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty_like(x)
    for tile_m in hl.tile(m, block_size=1):
        if keep[tile_m] == 0:  # one row a tile: a one-lane condition
            for tile_n in hl.tile(n):
                out[tile_m, tile_n] = -1.0
            continue
        for tile_n in hl.tile(n):
            out[tile_m, tile_n] = x[tile_m, tile_n] * 2
    return out


@pytest.mark.parametrize("m,n", [(1, 1), (9, 70)])
def test_continue_skips_the_rest_of_a_tile(m, n, device):
    x, keep = randn(m, n, device=device), torch.randint(0, 2, (m,), device=device)
    keep[0] = 0
    check_kernel(rows_kept_or_marked, (x, keep), lambda x, k: torch.where(k[:, None] == 0, -1.0, x * 2))


@helion.kernel()
def column_tile_sums(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            if tile_n.id % 3 == 1:
                continue
            values = x[tile_m, tile_n].to(torch.float32)
            if tile_n.id % 3 == 2:
                if tile_n.begin > 0:
                    acc = acc - values.sum(1)
                    continue
            else:
                acc = acc + 0.5 * values.sum(1)
            acc = acc + values.sum(1)
        out[tile_m] = acc
    return out


def test_continue_in_an_inner_loop_and_in_nested_branches(device):
    def reference(x, config):
        tile = torch.arange(x.shape[1]) // config["block_sizes"][1] % 3
        weights = torch.where(tile == 1, 0.0, torch.where(tile == 2, -1.0, 1.5)).double()
        return x @ weights

    check_kernel(column_tile_sums, (randn(6, 150, device=device),), reference, reference_takes_config=True)


def test_continue_folds_into_branches():
    """Triton has no `continue`: the kernel's loops reach Triton with the rest of each loop body
    in the branches that go on."""
    bound = column_tile_sums.bind((randn(6, 150),))
    code = code_without_comments(bound.to_triton_code(bound.config_spec.default_config()))
    kernel = re.search(r"\ndef _column_tile_sums_kernel.*?(?=\ndef )", code, re.S).group(0)
    assert "continue" not in kernel and kernel.count("else:") >= 2
