"""Split-K forms of matmul and linear, measured by tools/matmul_sweep.py before adoption."""
from __future__ import annotations

import torch

import build_tools.dsl as helion
import build_tools.dsl.language as hl


@helion.kernel(static_shapes=False)
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.size()
    n = b.size(1)
    split_k = hl.register_tunable("split_k", helion.PowerOfTwoFragment(1, 16, 1))
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    block_k = hl.register_block_size(16, k)
    k_chunk = helion.cdiv(helion.cdiv(k, split_k), block_k) * block_k
    if split_k == 1:
        out = torch.empty([m, n], dtype=a.dtype, device=a.device)
    else:
        out = torch.zeros([m, n], dtype=torch.float32, device=a.device)
    for tile_m, tile_n, tile_s in hl.tile([m, n, split_k], block_size=[block_m, block_n, 1]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        k_begin = tile_s.begin * k_chunk
        for tile_k in hl.tile(k_begin, torch.minimum(k_begin + k_chunk, k), block_size=block_k):
            acc = torch.addmm(acc, a[tile_m, tile_k], b[tile_k, tile_n])
        if split_k == 1:
            out[tile_m, tile_n] = acc.to(out.dtype)
        else:
            hl.atomic_add(out, [tile_m, tile_n], acc)
    return out.to(a.dtype)


@helion.kernel(static_shapes=False)
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = x.size()
    n = weight.size(0)
    split_k = hl.register_tunable("split_k", helion.PowerOfTwoFragment(1, 16, 1))
    block_m = hl.register_block_size(m)
    block_n = hl.register_block_size(n)
    block_k = hl.register_block_size(16, k)
    k_chunk = helion.cdiv(helion.cdiv(k, split_k), block_k) * block_k
    if split_k == 1:
        out = torch.empty([m, n], dtype=x.dtype, device=x.device)
    else:
        out = torch.empty([m, n], dtype=torch.float32, device=x.device).copy_(bias)
    for tile_m, tile_n, tile_s in hl.tile([m, n, split_k], block_size=[block_m, block_n, 1]):
        acc = hl.zeros([tile_m, tile_n], dtype=torch.float32)
        k_begin = tile_s.begin * k_chunk
        for tile_k in hl.tile(k_begin, torch.minimum(k_begin + k_chunk, k), block_size=block_k):
            acc = torch.addmm(acc, x[tile_m, tile_k], weight[tile_n, tile_k].T)
        if split_k == 1:
            out[tile_m, tile_n] = (acc + bias[tile_n].to(torch.float32)[None, :]).to(out.dtype)
        else:
            hl.atomic_add(out, [tile_m, tile_n], acc)
    return out.to(x.dtype)
