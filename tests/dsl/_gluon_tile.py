"""A small warp-specialized Gluon kernel for the cross-compile test: a loader partition copies one A
and one B tile by TMA (an mbarrier counts the bytes), the default partition multiplies them with an
asynchronous wgmma and stores the product. Imported only by the process that compiles without
TRITON_INTERPRET."""
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def _load_tiles(a_desc, b_desc, a_smem, b_smem, bar):
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(a_desc, [0, 0], bar, a_smem)
    tma.async_copy_global_to_shared(b_desc, [0, 0], bar, b_smem)


@gluon.jit
def _multiply(a_smem, b_smem, bar, c_ptr, BM: gl.constexpr, BN: gl.constexpr, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                     instr_shape=[16, BN, 16])
    mbarrier.wait(bar, 0)
    acc = warpgroup_mma(a_smem, b_smem, gl.zeros([BM, BN], gl.float32, layout), use_acc=False, is_async=True)
    acc = warpgroup_mma_wait(0, deps=(acc, ))
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


@gluon.jit
def tile_product(a_desc, b_desc, c_ptr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                 num_warps: gl.constexpr):
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [BK, BN], b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(_multiply, (a_smem, b_smem, bar, c_ptr, BM, BN, num_warps)),
                        (_load_tiles, (a_desc, b_desc, a_smem, b_smem, bar))], [4], [24])


def launch(bm: int = 64, bn: int = 128, bk: int = 64) -> tuple:
    """(args, kwargs) of one `tile_product` launch on CPU tensors (descriptors only record them)."""
    a = torch.empty(bm, bk, dtype=torch.float16)
    b = torch.empty(bk, bn, dtype=torch.float16)
    c = torch.empty(bm, bn, dtype=torch.float32)
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk], gl.NVMMASharedLayout.get_default_for([bm, bk], gl.float16))
    b_desc = TensorDescriptor.from_tensor(b, [bk, bn], gl.NVMMASharedLayout.get_default_for([bk, bn], gl.float16))
    return (a_desc, b_desc, c), dict(BM=bm, BN=bn, BK=bk, num_warps=4)
