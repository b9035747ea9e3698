"""Atomics that return the previous values, and programs that wait for each other (hl.signal /
hl.wait): tickets, rows split across programs that exchange partial sums, a lock, and the errors.
Under Triton's interpreter the waiting kernels run their programs in threads
(helion_kernels._interpreter); on a GPU they run concurrently for real."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.sync import CONCURRENT_PROGRAMS_FLAG

from ._harness import check_kernel, rand_positive, randn


@helion.kernel(static_shapes=False)
def take_tickets(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    counter = x.new_zeros(1, dtype=torch.int32)
    out = torch.empty(n, dtype=torch.int32, device=x.device)
    for i in hl.grid(n):
        out[i] = hl.atomic_add(counter, [0], 1)
    return out


@pytest.mark.parametrize("n", [1, 37])
def test_atomic_add_returns_each_program_a_distinct_ticket(n, device):
    check_kernel(take_tickets, (randn(n, device=device),), lambda x: torch.arange(n, dtype=torch.int32),
                 outputs=lambda tickets, args: tickets.sort().values)


@helion.kernel()
def add_and_keep_previous(acc: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    previous = torch.empty_like(acc)
    for tile in hl.tile(acc.size(0)):
        previous[tile] = hl.atomic_add(acc, [tile], x[tile])
    return previous


@pytest.mark.parametrize("n", [1, 70])
def test_atomic_add_of_a_tile_returns_the_previous_values(n, device):
    acc, x = randn(n, device=device), randn(n, device=device)
    check_kernel(add_and_keep_previous, (acc, x), lambda acc, x: (acc, acc + x), poison=(),
                 outputs=lambda previous, args: (previous, args[0]))


@helion.kernel(static_shapes=False)
def split_row_normalize(x: torch.Tensor) -> torch.Tensor:
    """x / x.sum(-1): each row is cut into pieces, one program a piece (taken from a ticket); each
    program publishes its piece's sum, waits for the row's other pieces and scales its own."""
    m, n = x.size()
    block = hl.register_block_size(n)
    pieces = helion.cdiv(n, block)
    out = torch.empty_like(x)
    parts = x.new_empty((m, pieces), dtype=torch.float32)
    sync = x.new_zeros(m + 1, dtype=torch.int32)  # arrivals per row, then the ticket counter
    for program in hl.grid(m * pieces):
        ticket = hl.atomic_add(sync, [m], 1)
        row = ticket // pieces
        piece = ticket % pieces
        for tile in hl.tile(piece * block, min(n, piece * block + block), block_size=block):
            values = x[row, tile].to(torch.float32)
            parts[row, piece] = torch.sum(values, dim=0)
            hl.signal(sync, [row], op="atomic_add")
            hl.wait(sync, [row], signal=pieces)
            total = torch.sum(parts[row, :], dim=0)
            out[row, tile] = (values / total).to(out.dtype)
    return out


@pytest.mark.parametrize("m,n", [(1, 1), (3, 37), (2, 130)])
def test_programs_of_a_row_exchange_partial_sums(m, n, device):
    x = rand_positive(m, n, device=device)
    ran = check_kernel(split_row_normalize, (x,), lambda x: x / x.sum(-1, keepdim=True), n_random=4)
    assert len(ran) == 5


def test_waiting_kernels_carry_the_concurrency_flag_and_others_do_not(device):
    from helion_kernels import _interpreter

    assert _interpreter.CONCURRENT_PROGRAMS_FLAG == CONCURRENT_PROGRAMS_FLAG  # the flag the interpreter reads
    x = rand_positive(2, 40, device=device)
    waiting = split_row_normalize.bind((x,)).to_triton_code()
    assert waiting.count(f".fn.{CONCURRENT_PROGRAMS_FLAG} = True") == 1
    assert "tl.debug_barrier()" in waiting and "sem='acquire'" in waiting and "sem='release'" in waiting
    assert CONCURRENT_PROGRAMS_FLAG not in take_tickets.bind((x[0],)).to_triton_code()


@helion.kernel(static_shapes=False)
def locked_sum(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    lock = x.new_zeros(1, dtype=torch.int32)
    total = x.new_zeros(1, dtype=torch.float32)
    for i in hl.grid(n):
        hl.signal(lock, [0], signal=1, wait_for=0, op="atomic_cas", sem="acq_rel")
        total[0] = total[0] + x[i]  # a plain read-modify-write, safe only under the lock
        hl.signal(lock, [0], signal=0, op="atomic_xchg", sem="release")
    return total


@pytest.mark.parametrize("n", [1, 19])
def test_atomic_cas_lock_serializes_a_critical_section(n, device):
    x = rand_positive(n, device=device)
    check_kernel(locked_sum, (x,), lambda x: x.sum().reshape(1), rtol=1e-5, atol=1e-5)


@helion.kernel(static_shapes=False)
def wait_on_tile(x: torch.Tensor) -> torch.Tensor:
    pad = x.new_zeros(x.size(0), dtype=torch.int32)
    for tile in hl.tile(x.size(0)):
        hl.wait(pad, [tile], signal=1)
    return x


@helion.kernel(static_shapes=False)
def signal_with_bad_op(x: torch.Tensor) -> torch.Tensor:
    pad = x.new_zeros(1, dtype=torch.int32)
    for i in hl.grid(x.size(0)):
        hl.signal(pad, [0], op="atomic_or")
    return x


@helion.kernel(static_shapes=False)
def wait_cas_without_update(x: torch.Tensor) -> torch.Tensor:
    pad = x.new_zeros(1, dtype=torch.int32)
    for i in hl.grid(x.size(0)):
        hl.wait(pad, [0], signal=1, op="atomic_cas")
    return x


@helion.kernel(static_shapes=False)
def wait_on_float_pad(x: torch.Tensor) -> torch.Tensor:
    pad = x.new_zeros(1)
    for i in hl.grid(x.size(0)):
        hl.wait(pad, [0], signal=1)
    return x


@pytest.mark.parametrize("kernel,error,words", [
    (wait_on_tile, helion.exc.NotSupported, "index one entry"),
    (signal_with_bad_op, helion.exc.NotSupported, "op='atomic_or'"),
    (wait_cas_without_update, helion.exc.NotSupported, "update with op='atomic_cas'"),
    (wait_on_float_pad, helion.exc.TypeMismatch, "integer signal pad"),
])
def test_sync_misuse_is_a_dsl_error(kernel, error, words, device):
    x = randn(4, device=device)
    with pytest.raises(error, match=words) as info:
        kernel.bind((x,)).to_triton_code()
    assert "test_sync.py:" in str(info.value)
