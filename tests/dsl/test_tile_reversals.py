"""The `tile_reversals` knob (one per top-level loop): the loop's programs take its tiles from the last
to the first, under every pid_type, loop order and L2 grouping. Results must not change; under
Triton's interpreter, which runs programs one after another, the order the tiles were taken in
(a ticket per tile) must be the plain order reversed. A loop whose programs wait for each other keeps
launch order (the knob offers only False there, and normalization drops a True)."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.config_spec import PID_TYPES

from ._harness import check_kernel, rand_positive, randn
from .test_sync import split_row_normalize


@helion.kernel(static_shapes=False)
def doubled_with_tickets(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """2 * x, and for each [block_m, block_n] tile the ticket its program took (the tile's place in
    the order the programs ran)."""
    m, n = x.size()
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    counter = x.new_zeros(1, dtype=torch.int32)
    out = torch.empty_like(x)
    tickets = torch.empty([helion.cdiv(m, block_m), helion.cdiv(n, block_n)], dtype=torch.int32, device=x.device)
    for tile_m, tile_n in hl.tile([m, n], block_size=[block_m, block_n]):
        out[tile_m, tile_n] = x[tile_m, tile_n] * 2
        tickets[tile_m.id, tile_n.id] = hl.atomic_add(counter, [0], 1)
    return out, tickets


def _config(pid_type: str, order: list, group: int, reverse: bool) -> helion.Config:
    return helion.Config(block_sizes=[4, 8], pid_type=pid_type, loop_orders=[order], l2_groupings=[group],
                         tile_reversals=[reverse])


@pytest.mark.parametrize("pid_type", PID_TYPES)
@pytest.mark.parametrize("order,group", [([0, 1], 1), ([1, 0], 1), ([0, 1], 2)])
@pytest.mark.parametrize("m,n", [(1, 1), (13, 37)])
def test_reversed_tiles_give_the_same_result_in_reversed_order(pid_type, order, group, m, n, device):
    x = randn(m, n, device=device)
    ran = {}
    for reverse in (False, True):
        config = _config(pid_type, order, group, reverse)
        check_kernel(doubled_with_tickets, (x,), lambda x: 2 * x, overrides=[dict(config)], n_random=0,
                     outputs=lambda result, args: result[0])
        bound = doubled_with_tickets.bind((x,))
        normalized = bound.config_spec.normalize(config)
        assert list(normalized["tile_reversals"]) == [reverse]
        _, tickets = bound.compile_config(normalized)(x.clone())
        ran[reverse] = tickets.cpu()
    total = ran[False].numel()
    for tickets in ran.values():  # every tile taken exactly once
        assert torch.equal(tickets.flatten().sort().values, torch.arange(total, dtype=torch.int32))
    sequential = device == "cpu" and pid_type != "persistent_interleaved"  # ticket = virtual program id
    if sequential:
        assert torch.equal(ran[True], total - 1 - ran[False])


def test_loops_whose_programs_wait_keep_launch_order(device):
    x = rand_positive(3, 37, device=device)
    spec = split_row_normalize.bind((x,)).config_spec
    (knob,) = [k for k in spec.knobs() if k.name == "tile_reversals"]
    assert knob.choices == (False,)
    assert list(spec.normalize(helion.Config(tile_reversals=[True]))["tile_reversals"]) == [False]
    plain = doubled_with_tickets.bind((x,)).config_spec
    assert [k.choices for k in plain.knobs() if k.name == "tile_reversals"] == [(False, True)]
    check_kernel(split_row_normalize, (x,), lambda x: x / x.sum(-1, keepdim=True), n_random=0,
                 overrides=[{"tile_reversals": [True]}])
