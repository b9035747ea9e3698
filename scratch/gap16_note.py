import torch, triton, triton.language as tl

@triton.jit
def dq_loop(q, do, k, v, lse, delta, dq, kv_len, qk_scale, UNROLL: tl.constexpr):
    rm = tl.program_id(0) * 64 + tl.arange(0, 64)
    rd = tl.arange(0, 64)
    qb = tl.load(q + rm[:, None] * 64 + rd[None, :])
    dob = tl.load(do + rm[:, None] * 64 + rd[None, :])
    l2 = tl.load(lse + rm) * 1.4426950408889634
    dl = tl.load(delta + rm)
    acc = tl.zeros([64, 64], tl.float32)
    for start in tl.range(0, kv_len, 16, loop_unroll_factor=UNROLL):
        rn = start + tl.arange(0, 16)
        kb = tl.load(k + rn[:, None] * 64 + rd[None, :], mask=(rn < kv_len)[:, None], other=0)
        vb = tl.load(v + rn[:, None] * 64 + rd[None, :], mask=(rn < kv_len)[:, None], other=0)
        p = tl.exp2(tl.dot(qb, tl.permute(kb, (1, 0))) * qk_scale - l2[:, None])
        dp = tl.dot(dob, tl.permute(vb, (1, 0)))
        acc = tl.dot((p * (dp - dl[:, None])).to(tl.float16), kb, acc=acc)
    tl.store(dq + rm[:, None] * 64 + rd[None, :], acc)

m, n, scale = 256, 544, 0.3
q, do = (torch.randn(m, 64, device="cuda", dtype=torch.float16) for _ in range(2))
k, v = (torch.randn(n, 64, device="cuda", dtype=torch.float16) for _ in range(2))
s = q.double() @ k.double().T * scale
lse = torch.logsumexp(s, -1)
p = torch.exp(s - lse[:, None])
delta = (do.double() * (p @ v.double())).sum(-1)
ref = (p * (do.double() @ v.double().T - delta[:, None])) @ k.double()
for unroll, warps in ((1, 16), (2, 8), (2, 16)):   # right, right, wrong
    dq = torch.full((m, 64), float("nan"), device="cuda")
    dq_loop[(m // 64,)](q, do, k, v, lse.float(), delta.float(), dq, n, scale * 1.4426950408889634, unroll,
                        num_warps=warps)
    print(unroll, warps, (dq.double() - ref).abs().max().item())
