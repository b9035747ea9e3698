"""Config space: shape of the config (one entry per tiled dim / reduction size / loop), knobs and
flatten/unflatten, normalize errors, a sweep of random configs agreeing with the default config, and
explicit configs setting every Config field."""
import re

import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.config_spec import PID_TYPES

from ._harness import check_kernel, config_with, randn
from .test_composite import _attention_reference, attention
from .test_matmul import matmul_split_k
from .test_reductions import center_rows, online_softmax

SWEEP_SEEDS = 10


@helion.kernel()
def add_2d(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] = x[tile_m, tile_n] + y[tile_m, tile_n]
    return out


@helion.kernel()
def add_3d(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(out.size()):
        out[tile] = x[tile] * y[tile]
    return out


@helion.kernel()
def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    _, n = y.size()
    out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, x[tile_m, tile_k], y[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


@helion.kernel()
def softmax(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m in hl.tile(x.size(0)):
        out[tile_m, :] = torch.softmax(x[tile_m, :], dim=-1)
    return out


@helion.kernel()
def scale_rows_grid(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for row in hl.grid(x.size(0)):
        for tile_n in hl.tile(x.size(1)):
            out[row, tile_n] = x[row, tile_n] * (row + 1.0)
    return out


def _matmul_args(device, m=37, k=50, n=29):
    return randn(m, k, device=device), randn(k, n, device=device)


def _tolerance(device, k=50):
    """Float32 products on the GPU use TF32: the error of a result grows as sqrt(k) (k: the
    reduction length; 2e-2 holds some 5 standard deviations at k=50)."""
    return {} if device == "cpu" else {"rtol": 2e-2, "atol": 2e-2 * max(1.0, (k / 50) ** 0.5)}


# --- config structure -------------------------------------------------------------------------

def test_matmul_config_structure(device):
    spec = matmul.bind(_matmul_args(device)).config_spec
    config = spec.default_config()
    assert len(config["block_sizes"]) == 3
    assert len(config["loop_orders"]) == 1 and sorted(config["loop_orders"][0]) == [0, 1]
    assert len(config["l2_groupings"]) == 1
    assert config["pid_type"] in PID_TYPES
    assert list(config.get("reduction_loops", [])) == []


def test_grid_dims_get_no_block_size(device):
    config = scale_rows_grid.bind((randn(4, 9, device=device),)).config_spec.default_config()
    assert len(config["block_sizes"]) == 1


def test_softmax_config_has_one_reduction_loop(device):
    config = softmax.bind((randn(4, 300, device=device),)).config_spec.default_config()
    assert len(config["reduction_loops"]) == 1
    assert config["block_sizes"] and len(config["block_sizes"]) == 1


def test_random_config_is_deterministic_per_seed(device):
    spec = matmul.bind(_matmul_args(device)).config_spec
    assert dict(spec.random_config(3)) == dict(spec.random_config(3))
    assert len({repr(sorted(dict(spec.random_config(seed)).items())) for seed in range(8)}) > 1


def test_random_config_max_tiles_keeps_blocks_and_chunks_to_a_few_tiles(device):
    """max_tiles draws block sizes and reduction chunks that cut their dimension into at most that
    many tiles (a whole-row reduction stays a choice), each config legal and deterministic per seed."""
    spec = center_rows.bind((randn(300, 1000, device=device),)).config_spec
    configs = [spec.random_config(seed, max_tiles=8) for seed in range(16)]
    assert [dict(c) for c in configs] == [dict(spec.random_config(seed, max_tiles=8)) for seed in range(16)]
    for config in configs:
        assert dict(spec.normalize(config)) == dict(config)
        (block,), (chunk,) = config["block_sizes"], config["reduction_loops"]
        assert -(-300 // block) <= 8 and (chunk is None or -(-1000 // chunk) <= 8)
    assert len({(c["block_sizes"][0], c["reduction_loops"][0]) for c in configs}) > 2
    assert any(min(spec.random_config(seed)["block_sizes"]) < 32 for seed in range(16))


def test_knobs_flatten_unflatten_round_trip(device):
    spec = matmul.bind(_matmul_args(device)).config_spec
    knobs = spec.knobs()
    assert knobs
    for seed in range(5):
        config = spec.random_config(seed)
        values = spec.flatten(config)
        assert len(values) == len(knobs)
        for knob, value in zip(knobs, values):
            assert knob.name in config or knob.name in spec.PER_LOOP  # per-loop fields: left out at default
            assert value in knob.choices, (knob, value)
            field = spec.per_loop(config, knob.name) if knob.name in spec.PER_LOOP else config[knob.name]
            assert (field if knob.index is None else field[knob.index]) == value
        assert dict(spec.unflatten(values)) == dict(spec.normalize(config))


@pytest.mark.parametrize("pick", [0, -1])
def test_unflatten_of_extreme_choices_runs(pick, device):
    x = randn(3, 200, device=device)
    spec = softmax.bind((x,)).config_spec
    extreme = spec.unflatten([knob.choices[pick] for knob in spec.knobs()])
    check_kernel(softmax, (x,), lambda x: torch.softmax(x, -1), n_random=0,
                 extra_configs=[spec.normalize(extreme)], atol=1e-6)


@pytest.mark.parametrize("bad_fields", [
    {"block_sizes": [16]},
    {"block_sizes": [16, 16, 16, 16]},
    {"pid_type": "diagonal"},
    {"indexing": "magic"},
    {"loop_orders": [[0, 0]]},
    {"num_warps": 3},
    {"blok_sizes": [16, 16, 16]},
    {"reduction_loops": [64]},
    {"pid_type": "persistent_interleaved", "num_stages": 0},
    {"maxnreg": 100},
    {"maxnreg": 16},
    {"maxnreg": 264},
    {"maxnreg": True},
])
def test_normalize_rejects_illegal_configs(bad_fields, device):
    spec = matmul.bind(_matmul_args(device)).config_spec
    with pytest.raises(helion.exc.InvalidConfig):
        spec.normalize(config_with(spec.default_config(), **bad_fields))
    assert issubclass(helion.exc.InvalidConfig, helion.exc.Base)


def test_normalize_fills_defaults(device):
    spec = matmul.bind(_matmul_args(device)).config_spec
    filled = spec.normalize(helion.Config(block_sizes=[16, 32, 16]))
    assert list(filled["block_sizes"]) == [16, 32, 16]
    default = spec.default_config()
    for name in ("num_warps", "num_stages", "pid_type", "indexing", "loop_orders", "l2_groupings"):
        assert filled[name] == default[name], name


# --- every config agrees with the default config (random ones, and all-first / all-last choices) ---

SWEEP_CASES = {
    "add_2d": (add_2d, lambda d: (randn(7, 19, device=d), randn(7, 19, device=d)), lambda x, y: x + y),
    "matmul": (matmul, _matmul_args, lambda x, y: x @ y),
    "softmax": (softmax, lambda d: (randn(5, 333, device=d),), lambda x: torch.softmax(x, -1)),
    "grid": (scale_rows_grid, lambda d: (randn(3, 45, device=d),),
             lambda x: x * torch.arange(1.0, x.size(0) + 1, dtype=torch.float64)[:, None]),
    "split_k": (matmul_split_k, lambda d: (randn(9, 70, device=d), randn(70, 11, device=d)),
                lambda x, y: x @ y),
    "layer_norm": (center_rows, lambda d: (randn(4, 150, device=d),),
                   lambda x: (x - x.mean(-1, keepdim=True))
                   * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-6)),
    "online_softmax": (online_softmax, lambda d: (randn(3, 90, device=d),), lambda x: torch.softmax(x, -1)),
    "attention": (attention, lambda d: (randn(2, 19, 16, device=d), randn(2, 19, 16, device=d),
                                        randn(2, 19, 16, device=d), True), _attention_reference),
}


@pytest.mark.parametrize("case", sorted(SWEEP_CASES))
def test_random_config_sweep(case, device):
    kernel, make_args, reference = SWEEP_CASES[case]
    args = make_args(device)
    bound = kernel.bind(args)
    default_result = bound.compile_config(bound.config_spec.default_config())(*args)
    spec = bound.config_spec
    extremes = [spec.normalize(spec.unflatten([knob.choices[pick] for knob in spec.knobs()]))
                for pick in (0, -1)]
    agreement = {"rtol": 1e-4, "atol": 1e-4} if device == "cpu" else _tolerance(device)

    def agrees_with_default(result, run_args):
        """Each config's own run (beside the reference) also agrees with the default config's."""
        torch.testing.assert_close(result, default_result, **agreement)
        return result

    check_kernel(kernel, args, reference, n_random=SWEEP_SEEDS, seed_offset=100, extra_configs=extremes,
                 outputs=agrees_with_default, **_tolerance(device))


# --- explicit configs: each field -----------------------------------------------------------

def test_matmul_persistent_interleaved_block_ptr(device):
    x, y = _matmul_args(device)
    config = helion.Config(block_sizes=[16, 32, 16], pid_type="persistent_interleaved",
                           l2_groupings=[4], loop_orders=[[1, 0]], indexing="block_ptr",
                           num_warps=4, num_stages=2)
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, extra_configs=[config],
                 **_tolerance(device))


@pytest.mark.parametrize("pid_type", PID_TYPES)
@pytest.mark.parametrize("l2_groupings", [[1], [2], [8]])
def test_matmul_pid_types(pid_type, l2_groupings, device):
    x, y = _matmul_args(device, 45, 30, 70)
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0,
                 overrides=[{"pid_type": pid_type, "l2_groupings": l2_groupings,
                             "block_sizes": [16, 16, 16]}], **_tolerance(device))


@pytest.mark.parametrize("pid_type", PID_TYPES)
def test_pointwise_pid_types_and_loop_orders(pid_type, device):
    x, y = randn(33, 20, device=device), randn(33, 20, device=device)
    check_kernel(add_2d, (x, y), lambda x, y: x + y, n_random=0, overrides=[
        {"pid_type": pid_type, "loop_orders": [[0, 1]], "block_sizes": [16, 8]},
        {"pid_type": pid_type, "loop_orders": [[1, 0]], "block_sizes": [8, 16]},
    ])


def test_l2_grouping_alias(device):
    x, y = _matmul_args(device)
    bound = matmul.bind((x, y))
    singular = helion.Config(block_sizes=[16, 16, 16], l2_grouping=4)
    assert list(bound.config_spec.normalize(singular)["l2_groupings"]) == [4]
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, extra_configs=[singular],
                 **_tolerance(device))


def test_flatten_loops(device):
    x, y = randn(21, 35, device=device), randn(21, 35, device=device)
    default = add_2d.bind((x, y)).config_spec.default_config()
    assert len(default["flatten_loops"]) == 1
    check_kernel(add_2d, (x, y), lambda x, y: x + y, n_random=0, overrides=[
        {"flatten_loops": [True], "block_sizes": [8, 16]},
        {"flatten_loops": [True], "block_sizes": [32, 4], "pid_type": "persistent_blocked"},
        {"flatten_loops": [False], "block_sizes": [32, 4]},
    ])


def test_range_fields(device):
    x, y = _matmul_args(device, 20, 100, 20)
    default = matmul.bind((x, y)).config_spec.default_config()
    loops = len(default["range_unroll_factors"])
    assert loops >= 1
    assert len(default["range_num_stages"]) == loops and len(default["range_warp_specializes"]) == loops
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, overrides=[
        {"range_unroll_factors": [2] * loops, "range_num_stages": [3] * loops,
         "range_warp_specializes": [False] * loops, "block_sizes": [16, 16, 16]},
        {"range_unroll_factors": [4] * loops, "range_num_stages": [0] * loops,
         "range_warp_specializes": [None] * loops, "block_sizes": [16, 16, 32]},
    ], **_tolerance(device, 100))


@pytest.mark.parametrize("num_warps, stages", [(8, 1), (8, 3), (16, 0), (32, 0)])
def test_dot_loops_are_never_unrolled(num_warps, stages, device):
    """Gap 16: Triton 3.6 miscompiles unrolled loops with a dot on sm_90: at 16+ warps, and with TF32
    dots at 8 warps in a one-stage loop. The knob offers no factor above 1 and normalization drops one."""
    x, y = _matmul_args(device, 128, 300, 128)
    bound = matmul.bind((x, y))
    (knob,) = [k for k in bound.config_spec.knobs() if k.name == "range_unroll_factors"]
    assert knob.choices == (0, 1)
    config = bound.config_spec.normalize({"block_sizes": [128, 128, 32], "num_warps": num_warps,
                                          "range_unroll_factors": [2], "range_num_stages": [stages]})
    assert config["num_warps"] == num_warps and list(config["range_unroll_factors"]) == [0]
    assert "loop_unroll_factor=2" not in bound.to_triton_code(config)
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, overrides=[dict(config)], **_tolerance(device, 300))


@pytest.mark.parametrize("blocks, warps", [([16, 16, 16], 4), ([64, 16, 16], 8), ([64, 64, 16], 32)])
def test_warps_keep_128_product_elements_each_beyond_4(blocks, warps, device):
    """Gap 16: a 64x16 product went wrong at 16 and 32 warps; 8x16 result elements per warp stay."""
    x, y = _matmul_args(device, 70, 40, 70)
    bound = matmul.bind((x, y))
    config = bound.config_spec.normalize({"block_sizes": blocks, "num_warps": 32})
    assert config["num_warps"] == warps
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, overrides=[dict(config)], **_tolerance(device))


@pytest.mark.parametrize("num_warps,num_stages", [(1, 1), (2, 5), (8, 3)])
def test_num_warps_and_num_stages(num_warps, num_stages, device):
    check_kernel(softmax, (randn(6, 100, device=device),), lambda x: torch.softmax(x, -1), n_random=0,
                 overrides=[{"num_warps": num_warps, "num_stages": num_stages}], atol=1e-6)


@pytest.mark.parametrize("indexing", [
    "pointer", "block_ptr", "tensor_descriptor",
    ["pointer", "block_ptr", "tensor_descriptor"],
    ["tensor_descriptor", "pointer", "block_ptr"],
])
def test_indexing_strategies(indexing, device):
    x, y = randn(40, 64, device=device), randn(40, 64, device=device)
    check_kernel(add_2d, (x, y), lambda x, y: x + y, n_random=0,
                 overrides=[{"indexing": indexing, "block_sizes": [16, 32]},
                            {"indexing": indexing, "block_sizes": [8, 16], "pid_type": "persistent_interleaved"}])


@pytest.mark.parametrize("indexing", ["block_ptr", "tensor_descriptor"])
def test_structured_indexing_on_matmul(indexing, device):
    x, y = _matmul_args(device, 48, 64, 32)
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0,
                 overrides=[{"indexing": indexing, "block_sizes": [16, 16, 16]}], **_tolerance(device))


def test_indexing_list_has_one_entry_per_memory_op(device):
    x, y = randn(8, 8, device=device), randn(8, 8, device=device)
    spec = add_2d.bind((x, y)).config_spec
    with pytest.raises(helion.exc.InvalidConfig):
        spec.normalize(config_with(spec.default_config(), indexing=["pointer", "block_ptr"]))


@pytest.mark.parametrize("policies", [["first", "last"], ["", "first"], ["last", ""]])
def test_load_eviction_policies(policies, device):
    x, y = randn(30, 50, device=device), randn(30, 50, device=device)
    default = add_2d.bind((x, y)).config_spec.default_config()
    assert len(default["load_eviction_policies"]) == 2
    check_kernel(add_2d, (x, y), lambda x, y: x + y, n_random=0,
                 overrides=[{"load_eviction_policies": policies}])


def test_reread_eviction_keeps_a_looped_reduction_s_row_for_its_next_pass(device):
    x = randn(3, 1000, device=device)
    bound = softmax.bind((x,))
    spec = bound.config_spec
    looped = spec.normalize(config_with(spec.default_config(), reduction_loops=[256], load_eviction_policies=["reread"]))
    policies = re.findall(r"eviction_policy='(\w+)'", bound.to_triton_code(looped))
    # the max and the sum passes read the row to reduce it, the output pass for the last time
    assert policies == ["evict_last", "evict_last", "evict_first"]
    whole = spec.normalize(config_with(spec.default_config(), reduction_loops=[None], load_eviction_policies=["reread"]))
    assert re.findall(r"eviction_policy='(\w+)'", bound.to_triton_code(whole)) == ["evict_first"]
    check_kernel(softmax, (x,), lambda x: torch.softmax(x, -1), n_random=0, atol=1e-6, overrides=[
        {"reduction_loops": [256], "load_eviction_policies": ["reread"]},
        {"reduction_loops": [None], "load_eviction_policies": ["reread"]},
    ])


def test_a_chunk_of_the_padded_row_width_loops_once_and_rereads(device):
    x = randn(3, 1000, device=device)
    bound = softmax.bind((x,))
    spec = bound.config_spec
    assert 1024 in spec.reduction_range(0)
    one_chunk = spec.normalize(config_with(spec.default_config(), reduction_loops=[1024], load_eviction_policies=["reread"]))
    source = bound.to_triton_code(one_chunk)
    assert source.count("for roffset_0 in tl.range(") == 3  # max, sum and output passes, one step each
    assert re.findall(r"eviction_policy='(\w+)'", source) == ["evict_last", "evict_last", "evict_first"]
    check_kernel(softmax, (x,), lambda x: torch.softmax(x, -1), n_random=0, atol=1e-6,
                 overrides=[{"reduction_loops": [1024], "load_eviction_policies": ["reread"]}])


def test_reduction_loops_field(device):
    x = randn(3, 1000, device=device)
    check_kernel(softmax, (x,), lambda x: torch.softmax(x, -1), n_random=0, atol=1e-6, overrides=[
        {"reduction_loops": [None]}, {"reduction_loops": [16]}, {"reduction_loops": [256]},
        {"reduction_loops": [64], "block_sizes": [2], "num_warps": 2},
    ])


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
@pytest.mark.parametrize("pid_type", ["flat", "xyz", "persistent_interleaved"])
def test_three_dim_loop_orders(order, pid_type, device):
    x, y = randn(3, 10, 19, device=device), randn(3, 10, 19, device=device)
    default = add_3d.bind((x, y)).config_spec.default_config()
    assert len(default["block_sizes"]) == 3 and sorted(default["loop_orders"][0]) == [0, 1, 2]
    check_kernel(add_3d, (x, y), lambda x, y: x * y, n_random=0,
                 overrides=[{"loop_orders": [order], "pid_type": pid_type, "block_sizes": [2, 4, 8]}])


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 10, 19)])
def test_three_dim_tile_random_configs(shape, device):
    x, y = randn(*shape, device=device), randn(*shape, device=device)
    check_kernel(add_3d, (x, y), lambda x, y: x * y)


@helion.kernel(static_shapes=False)
def double_dynamic(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.size(), dtype=x.dtype, device=x.device)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = x[tile_m, tile_n] * 2.0
    return out


@pytest.mark.parametrize("indexing", ["pointer", "block_ptr", "tensor_descriptor"])
def test_one_variant_with_any_strides(indexing, device):
    bound = double_dynamic.bind((randn(32, 48, device=device),))
    compiled = bound.compile_config(helion.Config(block_sizes=[16, 16], indexing=indexing))
    inputs = [randn(48, 32, device=device).T, randn(32, 96, device=device)[:, ::2],
              randn(20, 40, device=device), randn(1, 40, device=device).expand(6, 40)]
    for y in inputs:
        torch.testing.assert_close(compiled(y).double().cpu(), y.double().cpu() * 2.0)


@helion.kernel(static_shapes=False)
def softmax_dynamic(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m in hl.tile(x.size(0)):
        out[tile_m, :] = torch.softmax(x[tile_m, :], dim=-1)
    return out


@pytest.mark.parametrize("reduction_loops", [[None], [64], [1024]])
def test_tuned_config_reused_on_other_row_lengths(reduction_loops, device):
    bound = softmax_dynamic.bind((randn(4, 2048, device=device),))
    config = bound.config_spec.normalize(config_with(bound.config_spec.default_config(),
                                                     reduction_loops=reduction_loops))
    compiled = bound.compile_config(config)
    for shape in [(4, 2048), (3, 10), (2, 64), (5, 1000), (1, 3000)]:
        y = randn(*shape, device=device)
        torch.testing.assert_close(compiled(y).double().cpu(), torch.softmax(y.double().cpu(), -1),
                                   rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pid_type", PID_TYPES)
@pytest.mark.parametrize("case", ["softmax", "split_k", "attention", "grid", "layer_norm"])
def test_pid_types_on_other_programs(case, pid_type, device):
    kernel, make_args, reference = SWEEP_CASES[case]
    check_kernel(kernel, make_args(device), reference, n_random=0, overrides=[{"pid_type": pid_type}],
                 **_tolerance(device))


@helion.kernel(static_shapes=False)
def row_sums_two_ways(x: torch.Tensor) -> torch.Tensor:
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    looped = hl.register_tunable("looped", helion.EnumFragment((False, True)))
    block_n = hl.register_block_size(n)
    for tile_m in hl.tile(m):
        if looped:
            acc = hl.zeros([tile_m], dtype=torch.float32)
            for tile_n in hl.tile(n, block_size=block_n):
                acc = acc + x[tile_m, tile_n].sum(1)
            out[tile_m] = acc
        else:
            out[tile_m] = x[tile_m, :].sum(1)
    return out


def test_volume_cap_counts_only_the_branch_the_tunables_select(device):
    x = randn(3, 600, device=device)
    spec = row_sums_two_ways.bind((x,)).config_spec
    wide = {"block_sizes": [512, 128], "reduction_loops": [None]}   # [block_n, tile_m]
    # the device-loop branch holds 128 x 512 elements (at the cap); the `:` branch holds tile_m x
    # 1024 and never uses block_n. Counting its reduction dim under the loop branch used to shrink
    # the blocks there; counting block_n under the `:` branch would shrink tile_m too far.
    assert list(spec.normalize({**wide, "looped": True})["block_sizes"]) == [512, 128]
    assert list(spec.normalize({**wide, "looped": False})["block_sizes"]) == [512, 64]
    check_kernel(row_sums_two_ways, (x,), lambda x: x.sum(1),
                 extra_configs=[helion.Config(looped=True, **wide), helion.Config(looped=False, **wide)])


@helion.kernel(static_shapes=False)
def scale_two_tensors(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out_x, out_y = torch.empty_like(x), torch.empty_like(y)
    for tile_m, tile_n in hl.tile(x.size()):
        out_x[tile_m, tile_n] = x[tile_m, tile_n] * 2.0
    for tile_p, tile_q in hl.tile(y.size()):
        out_y[tile_p, tile_q] = y[tile_p, tile_q] + 1.0
    return out_x, out_y


def test_volume_cap_is_per_kernel(device):
    """Each top-level loop is its own Triton kernel: 256x256 tiles in both stay at the cap of one
    program, instead of the four blocks' product shrinking all of them."""
    x, y = randn(300, 700, device=device), randn(500, 260, device=device)
    spec = scale_two_tensors.bind((x, y)).config_spec
    assert list(spec.normalize({"block_sizes": [256, 256, 256, 256]})["block_sizes"]) == [256, 256, 256, 256]
    assert list(spec.normalize({"block_sizes": [512, 256, 64, 64]})["block_sizes"]) == [256, 256, 64, 64]


def test_num_warps_offers_32_capped_by_program_volume(device):
    args = (randn(70, 130, device=device), randn(70, 130, device=device))
    spec = add_2d.bind(args).config_spec
    assert next(k.choices for k in spec.knobs() if k.name == "num_warps")[-1] == 32
    big = spec.normalize(config_with(spec.default_config(), block_sizes=[32, 64], num_warps=32))
    assert big["num_warps"] == 32
    small = spec.normalize(config_with(spec.default_config(), block_sizes=[8, 16], num_warps=32))
    assert small["num_warps"] == 4
    check_kernel(add_2d, args, lambda x, y: x + y, n_random=0, extra_configs=[big])


def test_num_warps_rise_until_each_thread_holds_at_most_128_elements(device):
    """A 128x128 tile in 1 warp would hold 512 elements per thread (LLVM's O3 pass ran for minutes on
    such a softmax tile): the spec raises num_warps to 4; smaller tiles keep the warps they ask for."""
    args = (randn(300, 600, device=device), randn(300, 600, device=device))
    spec = add_2d.bind(args).config_spec
    raised = spec.normalize(config_with(spec.default_config(), block_sizes=[128, 128], num_warps=1))
    assert raised["num_warps"] == 4
    kept = spec.normalize(config_with(spec.default_config(), block_sizes=[32, 128], num_warps=1))
    assert kept["num_warps"] == 1
    check_kernel(add_2d, args, lambda x, y: x + y, n_random=0, extra_configs=[raised])


def test_num_warps_rise_until_each_thread_holds_at_most_128_product_elements(device):
    """A 128x256 product's accumulator in 2 warps (512 elements per thread) kept ptxas busy past the
    GPU tests' timeout: the spec raises num_warps to 8 (128 per thread); smaller products keep the
    warps they ask for."""
    x, y = _matmul_args(device, 128, 64, 256)
    spec = matmul.bind((x, y)).config_spec
    raised = spec.normalize({"block_sizes": [128, 256, 16], "num_warps": 2})
    assert raised["num_warps"] == 8
    kept = spec.normalize({"block_sizes": [64, 64, 16], "num_warps": 2})
    assert kept["num_warps"] == 2
    check_kernel(matmul, (x, y), lambda x, y: x @ y, n_random=0, overrides=[dict(raised)], **_tolerance(device))


@helion.kernel(static_shapes=False)
def narrow_or_wide_row_sums(narrow: torch.Tensor, wide: torch.Tensor) -> torch.Tensor:
    """A tunable picks the structure: by default the row sums of `narrow` (a reduction dim of 8),
    else those of `wide` (a reduction dim of its width)."""
    m = wide.size(0)
    use_wide = hl.register_tunable("use_wide", helion.EnumFragment((False, True)))
    out = wide.new_empty(m)
    for tile_m in hl.tile(m):
        if use_wide:
            out[tile_m] = torch.sum(wide[tile_m, :], dim=1)
        else:
            out[tile_m] = torch.sum(narrow[tile_m, :], dim=1)
    return out


def test_reduction_chunks_are_legal_per_compiled_structure(device):
    """reduction_loops[r] is checked against the r-th reduction dim of the structure the config
    compiles, not the default tunables' (whose dim here is 8 wide, not loopable): a chunk of 256
    loops the wide structure's 1000 columns, and the search offers chunks up to the cap."""
    narrow, wide = randn(5, 8, device=device), randn(5, 1000, device=device)
    bound = narrow_or_wide_row_sums.bind((narrow, wide))
    spec = bound.config_spec
    assert spec.reduction_range(0) == [None]
    choices = next(k.choices for k in spec.knobs() if k.name == "reduction_loops")
    assert choices[0] is None and max(choices[1:]) == 16384
    looped = spec.normalize({"use_wide": True, "reduction_loops": [256]})
    assert list(looped.reduction_loops) == [256]
    assert re.search(r"for roffset_0 in tl\.range\(0, \w+, _REDUCTION_BLOCK_0\)", bound.to_triton_code(looped))
    assert list(spec.normalize({"use_wide": True, "reduction_loops": [8192]}).reduction_loops) == [1024]
    assert list(spec.normalize({"use_wide": False, "reduction_loops": [256]}).reduction_loops) == [None]
    for fields in ({"use_wide": True, "reduction_loops": [256]}, {"use_wide": True, "reduction_loops": [1024]},
                   {"use_wide": True, "reduction_loops": [None]}):
        out = bound.compile_config(spec.normalize(fields))(narrow, wide)
        torch.testing.assert_close(out.double().cpu(), wide.double().sum(1).cpu(), rtol=1e-5, atol=1e-4)
    out = bound.compile_config(spec.normalize({"use_wide": False}))(narrow, wide)
    torch.testing.assert_close(out.double().cpu(), narrow.double().sum(1).cpu(), rtol=1e-5, atol=1e-5)


@helion.kernel(static_shapes=False)
def row_sums_one_or_two_tensors(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """A tunable adds a structure: the row sums of x, or (`both`) of x and then y in a second
    device loop, with a load the default structure lacks."""
    m, n = x.size()
    both = hl.register_tunable("both", helion.EnumFragment((False, True)))
    block_n = hl.register_block_size(n)
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        acc = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n, block_size=block_n):
            acc = acc + x[tile_m, tile_n].sum(1)
        if both:
            for tile_n in hl.tile(n, block_size=block_n):
                acc = acc + y[tile_m, tile_n].sum(1)
        out[tile_m] = acc
    return out


def test_knob_lists_are_sized_by_the_structure_the_tunables_compile(device):
    """The second loop and the load of y exist only under `both`: a config for that structure sets
    their knobs (before, every list had the default structure's one loop and two accesses, and the
    second loop and the third access always took defaults); the search offers their positions;
    lists sized for the default structure are padded with defaults."""
    x, y = randn(37, 300, device=device), randn(37, 300, device=device)
    bound = row_sums_one_or_two_tensors.bind((x, y))
    spec = bound.config_spec
    assert [len([k for k in spec.knobs() if k.name == name]) for name in ("range_num_stages", "indexing")] == [2, 3]
    both = spec.normalize({"both": True, "block_sizes": [64, 8], "range_num_stages": [0, 3],
                           "indexing": ["pointer", "block_ptr", "pointer"], "load_eviction_policies": ["", "first"]})
    assert (list(both.range_num_stages), list(both.indexing)) == ([0, 3], ["pointer", "block_ptr", "pointer"])
    code = bound.to_triton_code(both)
    first, second = re.findall(r"for offset_\w+ in tl\.range\([^\n]*\):", code)
    assert "num_stages" not in first and "num_stages=3" in second
    assert re.search(r"tl\.make_block_ptr\(y\b", code) and not re.search(r"tl\.make_block_ptr\(x\b", code)
    assert re.search(r"tl\.load\(tl\.make_block_ptr\(y\b[^\n]*eviction_policy='evict_first'", code)
    one = spec.normalize({"both": False, "range_num_stages": [0, 3], "indexing": ["pointer", "block_ptr", "pointer"]})
    assert (list(one.range_num_stages), list(one.indexing)) == ([0], ["pointer", "block_ptr"])
    padded = spec.normalize({"both": True, "indexing": ["pointer", "block_ptr"]})
    assert list(padded.indexing) == ["pointer", "block_ptr", "pointer"]
    with pytest.raises(helion.exc.InvalidConfig):
        spec.normalize({"both": True, "indexing": ["pointer"] * 4})
    ran = check_kernel(row_sums_one_or_two_tensors, (x, y),
                       lambda x, y, config: x.sum(1) + (y.sum(1) if config["both"] else 0),
                       extra_configs=[both, one, helion.Config(both=True)], reference_takes_config=True)
    assert sum(config["both"] for config in ran) >= 2


@helion.kernel(static_shapes=False)
def sum_of_one_two_or_three(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """`terms` picks a structure of 2, 3 or 4 accesses (1 to 3 loads and the store)."""
    terms = hl.register_tunable("terms", helion.EnumFragment((1, 2, 3)))
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        total = x[tile]
        if terms >= 2:
            total = total + y[tile]
        if terms == 3:
            total = total + z[tile]
        out[tile] = total
    return out


def test_a_config_of_one_structure_moves_to_another(device):
    """A config sized by one structure (3 accesses under terms=2) with its tunable moved to another
    (4 under terms=3, 2 by default, 4 in the search) is padded, as a probe's override does."""
    x, y, z = (randn(70, 130, device=device) for _ in range(3))
    spec = sum_of_one_two_or_three.bind((x, y, z)).config_spec
    two = spec.normalize({"terms": 2, "indexing": ["pointer", "block_ptr", "pointer"]})
    three = spec.normalize({**two, "terms": 3})
    assert list(three.indexing) == ["pointer", "block_ptr", "pointer", "pointer"]
    with pytest.raises(helion.exc.InvalidConfig):
        spec.normalize({"terms": 3, "indexing": ["pointer"] * 5})
    check_kernel(sum_of_one_two_or_three, (x, y, z), lambda x, y, z, config: x + (y if config["terms"] >= 2 else 0)
                 + (z if config["terms"] == 3 else 0), extra_configs=[two, three], reference_takes_config=True)
