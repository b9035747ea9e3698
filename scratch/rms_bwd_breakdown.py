"""Probe: where the time of the RMSNorm backward goes (main kernel, host sum, cast, gaps), H100."""
import json, os, statistics, sys
import torch
sys.path.insert(0, ".")
from helion_kernels._generated import rms_norm as gen

out_dir = os.environ.get("OUT", ".")
flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
res = {}
for m in (16384, 65536):
    n = 4096
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    inv = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
    fn = gen.rms_norm_bwd__0c8f2da728bf
    for _ in range(5):
        fn(dy, x, w, inv)
    torch.cuda.synchronize()
    times = []
    for _ in range(50):
        flush.zero_()
        torch.cuda._sleep(200000)
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(dy, x, w, inv); e.record()
        torch.cuda.synchronize(); times.append(s.elapsed_time(e) * 1000)
    part = torch.randn(132, n, device="cuda")
    stimes = []
    for _ in range(50):
        flush.zero_()
        torch.cuda._sleep(200000)
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); part.sum(0).to(torch.bfloat16); e.record()
        torch.cuda.synchronize(); stimes.append(s.elapsed_time(e) * 1000)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            flush.zero_()
            torch.cuda._sleep(200000)
            fn(dy, x, w, inv)
        torch.cuda.synchronize()
    evs = [ev for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
    by = {}
    for ev in evs:
        by.setdefault(ev.name[:60], []).append(ev.device_time)
    res[m] = {"full_us": statistics.median(times), "host_sum_cast_us": statistics.median(stimes),
              "kernels": {k: statistics.median(v) for k, v in by.items()}}
    # gaps: sequence of kernels after the sleep kernel
    seq = sorted(evs, key=lambda ev: ev.time_range.start)
    gaps = []
    for a, b in zip(seq, seq[1:]):
        gaps.append((a.name[:30], b.name[:30], b.time_range.start - a.time_range.end))
    res[m]["gaps_last_iter"] = gaps[-4:]
    print(m, json.dumps(res[m], indent=1))
json.dump(res, open(os.path.join(out_dir, "rms_bwd_breakdown.json"), "w"), indent=1)
