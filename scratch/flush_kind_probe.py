"""Probe: how the L2 flush's kind moves the row kernels' and the copies' times (H100). The report
flushes by writing 256 MB, which leaves dirty lines that the next kernel's misses must write back;
a read flush leaves clean lines. Times: median of 50 CUDA-event runs, alternating kinds."""
import json, os, statistics, sys
import torch
sys.path.insert(0, ".")
import helion_kernels as hk

flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
read_sink = torch.empty(1, dtype=torch.int64, device="cuda")


def write_flush():
    flush.zero_()


def read_flush():
    torch.sum(flush.view(torch.int64), dim=0, keepdim=True, out=read_sink)


x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
s = torch.randn(4096, 16384, device="cuda", dtype=torch.bfloat16)
src_same = torch.empty(128 * 1024 * 1024, dtype=torch.int8, device="cuda")   # 256 MB moved
dst_same = torch.empty_like(src_same)
src_big = torch.empty(512 * 1024 * 1024, dtype=torch.int8, device="cuda")    # 1 GiB moved
dst_big = torch.empty_like(src_big)
cases = {
    "rms_norm_fwd 16384x4096": (lambda: hk.rms_norm(x, (4096,), w, 1e-6), 2 * x.numel() * 2),
    "softmax_fwd 4096x16384": (lambda: hk.softmax(s, -1), 2 * s.numel() * 2),
    "copy 256 MB moved": (lambda: dst_same.copy_(src_same), 2 * src_same.numel()),
    "copy 1 GiB moved": (lambda: dst_big.copy_(src_big), 2 * src_big.numel()),
}
for fn, _ in cases.values():
    for _ in range(3):
        fn()
torch.cuda.synchronize()
out = {}
for name, (fn, nbytes) in cases.items():
    times = {"write": [], "read": []}
    for _ in range(50):
        for kind, flusher in (("write", write_flush), ("read", read_flush)):
            flusher()
            torch.cuda._sleep(100000)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); torch.cuda.synchronize()
            times[kind].append(a.elapsed_time(b) * 1000)
    out[name] = {kind: {"us": statistics.median(v), "GB/s": nbytes / statistics.median(v) / 1e3} for kind, v in times.items()}
    print(name, json.dumps(out[name]))
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "flush_kind_probe.json"), "w"), indent=1)
