"""Atomics that return the previous values, and programs that wait for each other (hl.signal /
hl.wait): tickets, rows split across programs that exchange partial sums, a lock, and the errors.
Under Triton's interpreter the waiting kernels run their programs in threads
(helion_kernels._interpreter); on a GPU they run concurrently for real."""
import pytest
import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.dsl.sync import CONCURRENT_PROGRAMS_FLAG

from ._harness import check_kernel, rand_positive, randint, randn


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


@helion.kernel()
def scatter_extremes(x: torch.Tensor, counts: torch.Tensor, idx: torch.Tensor, high: torch.Tensor,
                     low: torch.Tensor, bits: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Per bin: the largest and smallest float of x and of counts, and the OR, AND and XOR of
    counts' bits, by atomics of the scattered tiles (float max/min take Triton's sign split)."""
    for tile in hl.tile(x.size(0)):
        bins = idx[tile]
        hl.atomic_max(high, [bins, 0], x[tile])
        hl.atomic_min(low, [bins, 0], x[tile])
        hl.atomic_max(bits, [bins, 0], counts[tile], sem="release")
        hl.atomic_min(bits, [bins, 1], counts[tile])
        hl.atomic_or(bits, [bins, 2], counts[tile])
        hl.atomic_and(bits, [bins, 3], counts[tile], sem="acq_rel")
        hl.atomic_xor(bits, [bins, 4], counts[tile])
    return high, low, bits


def scatter_extremes_reference(x, counts, idx, high, low, bits):
    high, low, bits = high.clone(), low.clone(), bits.clone()
    for value, count, b in zip(x.tolist(), counts.tolist(), idx.tolist()):
        high[b, 0] = max(high[b, 0].item(), value)
        low[b, 0] = min(low[b, 0].item(), value)
        bits[b, 0] = max(bits[b, 0].item(), count)
        bits[b, 1] = min(bits[b, 1].item(), count)
        bits[b, 2] |= count
        bits[b, 3] &= count
        bits[b, 4] ^= count
    return high, low, bits


@pytest.mark.parametrize("n,bins", [(1, 1), (45, 6), (130, 3)])
def test_atomic_max_min_and_bitwise_scatters(n, bins, device):
    x = randn(n, device=device)
    counts = torch.randint(-2**20, 2**20, (n,), dtype=torch.int32).to(device)
    idx = randint(0, bins, n, device=device)
    high, low = randn(bins, 1, device=device), randn(bins, 1, device=device)
    bits = torch.randint(-2**20, 2**20, (bins, 5), dtype=torch.int32).to(device)
    check_kernel(scatter_extremes, (x, counts, idx, high, low, bits), scatter_extremes_reference)


@helion.kernel()
def swap_and_compare(acc: torch.Tensor, fresh: torch.Tensor, expected: torch.Tensor,
                     flags: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """atomic_xchg of a float tile (the previous values back), and atomic_cas of an int tile: a
    flag becomes 7 where it equals `expected`; the lanes past the end must leave flags[0] alone."""
    swapped = torch.empty_like(acc)
    seen = torch.empty_like(flags)
    for tile in hl.tile(acc.size(0)):
        swapped[tile] = hl.atomic_xchg(acc, [tile], fresh[tile])
        seen[tile] = hl.atomic_cas(flags, [tile], expected[tile], 7, sem="acq_rel")
    return swapped, seen


@pytest.mark.parametrize("n", [1, 5, 70])
def test_atomic_xchg_and_cas_return_the_previous_values(n, device):
    acc, fresh = randn(n, device=device), randn(n, device=device)
    flags = torch.randint(0, 3, (n,), dtype=torch.int32)
    flags[0] = 0
    expected = torch.randint(0, 3, (n,), dtype=torch.int32)
    expected[0] = 1
    check_kernel(swap_and_compare, (acc, fresh, expected.to(device), flags.to(device)),
                 lambda acc, fresh, expected, flags: (acc, flags, fresh, torch.where(flags == expected, 7, flags)),
                 outputs=lambda result, args: (*result, args[0], args[3]))


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


@helion.kernel()
def bitwise_atomic_on_floats(x: torch.Tensor) -> torch.Tensor:
    for tile in hl.tile(x.size(0)):
        hl.atomic_or(x, [tile], 1)
    return x


@helion.kernel()
def atomic_max_on_bfloat16(x: torch.Tensor) -> torch.Tensor:
    out = torch.zeros([1], dtype=torch.bfloat16, device=x.device)
    for tile in hl.tile(x.size(0)):
        hl.atomic_max(out, [0], x[tile].max())
    return out


@pytest.mark.parametrize("kernel,error,words", [
    (wait_on_tile, helion.exc.NotSupported, "index one entry"),
    (signal_with_bad_op, helion.exc.NotSupported, "op='atomic_or'"),
    (wait_cas_without_update, helion.exc.NotSupported, "update with op='atomic_cas'"),
    (wait_on_float_pad, helion.exc.TypeMismatch, "integer signal pad"),
    (bitwise_atomic_on_floats, helion.exc.TypeMismatch, "hl.atomic_or on a torch.float32 tensor: it takes integer elements"),
    (atomic_max_on_bfloat16, helion.exc.TypeMismatch, "hl.atomic_max on a torch.bfloat16 tensor: it takes 32- or 64-bit"),
])
def test_sync_misuse_is_a_dsl_error(kernel, error, words, device):
    x = randn(4, device=device)
    with pytest.raises(error, match=words) as info:
        kernel.bind((x,)).to_triton_code()
    assert "test_sync.py:" in str(info.value)
