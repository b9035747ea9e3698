"""Peeled device loops (`range_peel_tails`): a one-dimensional tile loop runs its whole tiles without a
tail mask and its partial last tile in a second, masked loop; the carried values flow through both.
Results must match the unpeeled loop at every size: spans that are a multiple of the block (no tail),
shorter than one block (no whole tile), with a tail, empty and inverted (run-time bounds)."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl

from ._harness import check_kernel, code_without_comments, randn


@helion.kernel(static_shapes=False)
def row_max_and_softmax_sum(x: torch.Tensor) -> torch.Tensor:
    """Online softmax statistics over the columns: a max (where a masked-off zero would win over
    negative rows) and a rescaled sum, both carried across the column loop."""
    m, n = x.size()
    out = torch.empty([m], dtype=torch.float32, device=x.device)
    for tile_m in hl.tile(m):
        row_max = hl.full([tile_m], float("-inf"), dtype=torch.float32)
        row_sum = hl.zeros([tile_m], dtype=torch.float32)
        for tile_n in hl.tile(n):
            values = x[tile_m, tile_n].to(torch.float32)
            new_max = torch.maximum(row_max, torch.amax(values, dim=1))
            row_sum = row_sum * torch.exp(row_max - new_max) + torch.sum(torch.exp(values - new_max[:, None]), dim=1)
            row_max = new_max
        out[tile_m] = row_max + torch.log(row_sum)
    return out


@helion.kernel(static_shapes=False)
def matmul_k_loop(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.size()
    n = b.size(1)
    out = torch.empty([m, n], dtype=torch.float32, device=a.device)
    for tile_m, tile_n in hl.tile([m, n]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        for tile_k in hl.tile(k):
            acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        out[tile_m, tile_n] = acc
    return out


@helion.kernel(static_shapes=False)
def column_sums_between(x: torch.Tensor, begin: int, end: int) -> torch.Tensor:
    """Sums of rows begin..end-1 (run-time bounds, possibly empty or inverted)."""
    m, n = x.size()
    out = torch.empty([n], dtype=torch.float32, device=x.device)
    for tile_n in hl.tile(n):
        acc = hl.zeros([tile_n], dtype=torch.float32)
        for tile_r in hl.tile(begin, end):
            acc = acc + torch.sum(x[tile_r, tile_n].to(torch.float32), dim=0)
        out[tile_n] = acc
    return out


PEELED = [helion.Config(range_peel_tails=[True]), helion.Config(range_peel_tails=[True], range_unroll_factors=[2])]


@pytest.mark.parametrize("shape", [(3, 64), (5, 100), (2, 7), (1, 1), (4, 300)])
def test_peeled_reduction_loop(shape, device):
    x = randn(*shape, device=device) - 3.0  # negative rows: a max over an unmasked zero would be wrong
    configs = check_kernel(row_max_and_softmax_sum, (x,), lambda x: torch.logsumexp(x, dim=1),
                           extra_configs=[helion.Config(block_sizes=[2, 16], range_peel_tails=[True]),
                                          helion.Config(block_sizes=[4, 32], range_peel_tails=[True],
                                                        range_num_stages=[2])], n_random=1)
    assert sum(list(config["range_peel_tails"]) == [True] for config in configs) >= 2


@pytest.mark.parametrize("mnk", [(16, 16, 64), (20, 24, 50), (16, 16, 8)])
def test_peeled_dot_loop(mnk, device):
    m, n, k = mnk
    a, b = randn(m, k, device=device), randn(k, n, device=device)
    # fp32 dots run in TF32 on a GPU (tolerance as in test_matmul)
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if device == "cuda" else {}
    check_kernel(matmul_k_loop, (a, b), lambda a, b: a @ b,
                 extra_configs=[helion.Config(block_sizes=[16, 16, 16], range_peel_tails=[True])], n_random=1,
                 **tolerance)


@pytest.mark.parametrize("begin,end", [(0, 40), (3, 37), (5, 6), (9, 9), (20, 4)])
def test_peeled_loop_over_runtime_bounds(begin, end, device):
    x = randn(40, 24, device=device)
    check_kernel(column_sums_between, (x, begin, end), lambda x, b, e: x[b:e].sum(0) if e > b else x[0] * 0,
                 extra_configs=[helion.Config(block_sizes=[8, 4], **peeled) for peeled in
                                ({"range_peel_tails": [True]}, {"range_peel_tails": [True], "range_unroll_factors": [2]})],
                 n_random=1)


def test_peeling_drops_the_tail_mask_from_the_main_loop_only():
    bound = column_sums_between.bind((torch.randn(40, 24), 3, 37))
    code = code_without_comments(bound.to_triton_code(helion.Config(block_sizes=[8, 4], range_peel_tails=[True],
                                                                    range_num_stages=[2])))
    loops = [line.strip() for line in code.splitlines() if "tl.range(" in line]
    assert len(loops) == 2 and "num_stages=2" in loops[0] and "num_stages" not in loops[1], loops
    main, tail = code.split(loops[1])
    main = main.split(loops[0])[1]
    assert "< end" not in main and "< end" in tail  # the row mask is the tail loop's only
    plain = code_without_comments(bound.to_triton_code(helion.Config(block_sizes=[8, 4])))
    assert len([line for line in plain.splitlines() if "tl.range(" in line]) == 1


def test_peel_knob_only_for_loops_that_can_end_in_a_partial_tile():
    spec = column_sums_between.bind((torch.randn(40, 24), 3, 37)).config_spec
    (knob,) = [k for k in spec.knobs() if k.name == "range_peel_tails"]
    assert knob.choices == (False, True)
    # static sizes that the block divides: every tile is whole, nothing to peel
    static = helion.kernel(static_shapes=True)(matmul_k_loop.fn).bind((torch.randn(16, 64), torch.randn(64, 16)))
    config = static.config_spec.normalize(helion.Config(block_sizes=[16, 16, 16], range_peel_tails=[True]))
    assert list(config["range_peel_tails"]) == [False]


@pytest.mark.parametrize("n", [64, 100])
def test_peeled_copies_share_their_access_knobs(n, device):
    """A peeled loop emits its body's loads twice; both copies take the access's one `indexing`
    and eviction position, so the store after the loop keeps position 1 (before the twenty-first
    session the tail's copy took position 1 and pushed the store past the list)."""
    x = randn(12, n, device=device) - 3.0
    config = helion.Config(block_sizes=[4, 32], range_peel_tails=[True], indexing=["pointer", "block_ptr"],
                           load_eviction_policies=["last"])
    bound = row_max_and_softmax_sum.bind((x,))
    code = code_without_comments(bound.to_triton_code(config))
    assert bound.config_spec.found.loads + bound.config_spec.found.stores == 2
    assert code.count("tl.load(") == 2 and code.count("eviction_policy='evict_last'") == 2  # both copies
    assert code.count("tl.make_block_ptr(") == 1 and "tl.store(tl.make_block_ptr(" in code.replace("\n", "")
    torch.testing.assert_close(bound.compile_config(config)(x), torch.logsumexp(x.double(), dim=1).float(),
                               rtol=1e-5, atol=1e-5)
