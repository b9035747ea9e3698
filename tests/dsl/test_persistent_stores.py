"""Two knobs of tiled matrix-product kernels: `persistent_flattens` (a persistent pid_type's tile loop
as `tl.range(..., flatten=True)`, so that the loops inside it pipeline across tiles) and
`store_subtiles` (a tensor-descriptor store written in 2 or 4 pieces along its last dimension).
Results must match at sizes that no block divides, with the descriptor store taken (the launcher's
TMA flag) and refused (a row stride TMA cannot use falls back to one pointer store)."""
import pytest
import torch

import build_tools.dsl as helion
from build_tools.dsl import exc

from ._harness import check_kernel, code_without_comments, randn
from .test_launch_limits import launches_of
from .test_matmul import matmul_addmm, matmul_tolerance

DESCRIBED = ["tensor_descriptor"] * 3  # loads of x and y, the store of out


def configs(pieces: int) -> list:
    return [helion.Config(block_sizes=[16, 32, 16], indexing=DESCRIBED, pid_type=pid, persistent_flattens=[flat],
                          store_subtiles=[pieces])
            for pid in ("persistent_interleaved", "persistent_blocked") for flat in (False, True)]


def out_store_flag(constants: dict) -> bool:
    (flag,) = [value for name, value in constants.items() if name.startswith("_TMA_out")]
    return flag


@pytest.mark.parametrize("m,k,n", [(37, 50, 72), (1, 9, 40), (70, 33, 136)])
@pytest.mark.parametrize("pieces", [1, 2, 4])
def test_subtiled_descriptor_store_in_persistent_loops(m, k, n, pieces, device):
    x, y = randn(m, k, dtype=torch.float16, device=device), randn(k, n, dtype=torch.float16, device=device)
    ran = check_kernel(matmul_addmm, (x, y), lambda x, y: x @ y, extra_configs=configs(pieces), n_random=0,
                       **matmul_tolerance(device, torch.float16))
    persistent = [c for c in ran if c["pid_type"] != "flat"]  # check_kernel also runs the default config
    assert [list(c["store_subtiles"]) for c in persistent] == [[pieces]] * 4
    for config in persistent:
        _, launched = launches_of(matmul_addmm, (x, y), config, run=False)
        ((_, constants),) = launched
        assert out_store_flag(constants)  # 8-column pieces of fp16 rows: 16 bytes, TMA takes them


def test_pieces_below_sixteen_bytes_store_through_pointers(device):
    """With 16-column tiles in 4 pieces, a piece spans 8 bytes of fp16: TMA cannot store it, so the
    launcher sends the store down the pointer path. A row stride of 37 fp16 (74 bytes) is refused
    whatever the pieces."""
    for n, block_n in ((48, 16), (37, 32)):
        x, y = randn(20, 24, dtype=torch.float16, device=device), randn(24, n, dtype=torch.float16, device=device)
        config = helion.Config(block_sizes=[16, block_n, 16], indexing=DESCRIBED, pid_type="persistent_interleaved",
                               persistent_flattens=[True], store_subtiles=[4])
        check_kernel(matmul_addmm, (x, y), lambda x, y: x @ y, extra_configs=[config], n_random=0,
                     **matmul_tolerance(device, torch.float16))
        _, launched = launches_of(matmul_addmm, (x, y), config, run=False)
        ((_, constants),) = launched
        assert not out_store_flag(constants)


def test_knobs_and_their_normalization():
    bound = matmul_addmm.bind((torch.randn(40, 24), torch.randn(24, 48)))
    spec = bound.config_spec
    knobs = {k.name: k.choices for k in spec.knobs() if k.name in ("persistent_flattens", "store_subtiles")}
    assert knobs == {"persistent_flattens": (False, True), "store_subtiles": (1, 2, 4)}
    described = spec.normalize(helion.Config(indexing=DESCRIBED, pid_type="persistent_blocked",
                                             persistent_flattens=[True], store_subtiles=[2]))
    assert list(described["persistent_flattens"]) == [True] and list(described["store_subtiles"]) == [2]
    # a flat grid has no tile loop to flatten; a pointer store is written whole
    plain = spec.normalize(helion.Config(indexing="pointer", pid_type="flat", persistent_flattens=[True],
                                         store_subtiles=[2]))
    assert list(plain["persistent_flattens"]) == [False] and list(plain["store_subtiles"]) == [1]
    with pytest.raises(exc.InvalidConfig, match="store_subtiles"):
        spec.normalize(helion.Config(indexing=DESCRIBED, store_subtiles=[3]))


def test_generated_loop_and_pieces():
    bound = matmul_addmm.bind((torch.randn(40, 24), torch.randn(24, 48)))
    code = code_without_comments(bound.to_triton_code(helion.Config(
        block_sizes=[16, 32, 16], indexing=DESCRIBED, pid_type="persistent_interleaved", persistent_flattens=[True],
        store_subtiles=[4])))
    loops = [line.strip() for line in code.splitlines() if "tl.range(" in line]
    assert len(loops) == 2 and "flatten=True" in loops[0] and "flatten" not in loops[1], loops
    assert code.count("tl.split(") == 3  # the tile halved, then each half
    assert code.count(".store([") == 4
    whole = code_without_comments(bound.to_triton_code(helion.Config(
        block_sizes=[16, 32, 16], indexing=DESCRIBED, pid_type="persistent_interleaved")))
    assert "flatten=True" not in whole and "tl.split(" not in whole and whole.count(".store([") == 1
