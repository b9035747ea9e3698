"""Probe (H200): what adding each query tile's dq contribution into an fp32 dq buffer costs, the
one-pass backward's extra traffic, with Triton's element atomics against the tile-wide TMA reduce
(`tensor_descriptor.atomic_add`, cp.reduce.async.bulk.tensor) and a plain tile store for scale.
Grid: one program per (batch-head, key tile of BN rows), each adding a [BM, D] fp32 tile for every
query tile of the sequence, as the dk/dv kernel of a one-pass backward would. Prints microseconds
(median, triton.testing.do_bench) per form and shape; writes $OUT/dq_reduce_probe.json."""
import json
import os

import torch
import triton
import triton.language as tl


@triton.jit
def _add_tiles(dq, S, BH, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, FORM: tl.constexpr):
    pid = tl.program_id(0)
    bh = pid // tl.cdiv(S, BN)
    n = pid % tl.cdiv(S, BN)
    rows = tl.arange(0, BM)
    cols = tl.arange(0, D)
    value = (rows[:, None] * D + cols[None, :]).to(tl.float32) * 1e-6 + n.to(tl.float32)
    desc = tl.make_tensor_descriptor(dq, [BH * S, D], [D, 1], [BM, D])
    for m in range(0, tl.cdiv(S, BM)):
        if FORM == 0:
            ptr = dq + (bh * S + m * BM + rows)[:, None] * D + cols[None, :]
            tl.atomic_add(ptr, value, sem="relaxed")
        elif FORM == 1:
            desc.atomic_add([bh * S + m * BM, 0], value)
        else:
            desc.store([bh * S + m * BM, 0], value)
        value += 1.0


def main():
    torch.cuda.set_device(0)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    rows = []
    for B, H, S, D, BN in ((4, 32, 4096, 64, 128), (4, 32, 4096, 64, 64), (4, 32, 4096, 128, 128), (4, 32, 2048, 64, 128)):
        BM = 64
        dq = torch.zeros(B * H * S, D, device="cuda", dtype=torch.float32)
        grid = (B * H * triton.cdiv(S, BN),)
        times = {}
        for form, name in enumerate(("element atomics", "tma reduce", "tma store")):
            fn = lambda: _add_tiles[grid](dq, S, B * H, D=D, BM=BM, BN=BN, FORM=form, num_warps=4)
            fn()
            torch.cuda.synchronize()
            times[name] = triton.testing.do_bench(fn, warmup=5, rep=200, return_mode="median") * 1000
        check = torch.zeros_like(dq)
        _add_tiles[grid](check, S, B * H, D=D, BM=BM, BN=BN, FORM=1, num_warps=4)
        ref = torch.zeros_like(dq)
        _add_tiles[grid](ref, S, B * H, D=D, BM=BM, BN=BN, FORM=0, num_warps=4)
        same = torch.allclose(check, ref, rtol=1e-5, atol=1e-3)
        row = {"B": B, "H": H, "S": S, "D": D, "BN": BN, "BM": BM, "us": times, "reduce equals atomics": same}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "dq_reduce_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
