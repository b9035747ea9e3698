"""Writes scratch/attention_d64_ws_jobs.json and times its variants: Triton 3.6's automatic Hopper
warp specialization for the D64 non-causal attention forward (the D128 one gained 1.11-1.15x in
the nineteenth and twentieth sessions). The table's one D64 non-causal entry (B16 H16 S512) serves
every D64 non-causal shape by nearest shape, so each variant is timed at the report's D64 shapes
(benchmarks.timing.Timer.device_rounds, one process, with SDPA's cuDNN backend); outputs are
compared with the tuned config's. Correctness at odd lengths: scratch/attention_ws_check.py
scratch/attention_d64_ws_jobs.json.
Run: python3 scratch/attention_d64_ws.py [TABLE]"""
import json, statistics, sys
sys.path.insert(0, ".")
import torch
import torch.nn.functional as F
from benchmarks.timing import Timer
from build_tools.dsl.config import Config
from tools.config_probe import _entry, _spec

TD = "tensor_descriptor"
WS = {"indexing": [TD] * 5, "num_warps": 4, "range_warp_specializes": [True], "range_peel_tails": [True]}
VARIANTS = {f"ws {bm}x{bn} s{stages}": {**WS, "block_sizes": [bm, bn], "num_stages": stages}
            for bm, bn, stages in ((128, 128, 1), (128, 128, 2), (128, 64, 1), (128, 64, 2), (128, 64, 3), (64, 128, 2))}
SHAPE = {"B": 16, "H": 16, "Hkv": 16, "Sq": 512, "Sk": 512, "D": 64, "causal": False}
JOBS = [{"op": "attention_fwd", "dtype": dtype, "shape": SHAPE, "variants": VARIANTS} for dtype in ("bfloat16", "float16")]


def main():
    table = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "tuned_configs/sm_90.json"))
    spec = _spec("attention_fwd")
    timer = Timer(torch.device("cuda"))
    g = torch.Generator(device="cuda").manual_seed(0)
    for job in JOBS:
        dtype = getattr(torch, job["dtype"])
        tuned = _entry(table, job["op"], job["dtype"], job["shape"])["config"]
        fns = None
        for b, h, s in ((16, 16, 512), (4, 32, 1024), (4, 32, 2048), (4, 32, 4096), (4, 32, 8192)):
            q, k, v = (torch.randn(b, h, s, 64, device="cuda", dtype=dtype, generator=g) for _ in range(3))
            args = (q, k, v, False, 0.125)
            if fns is None:  # one binding serves every length (static_shapes=False)
                spec.kernel.reset()
                bound = spec.kernel.bind(args)
                fns = {label: bound.compile_config(bound.config_spec.normalize(Config({**tuned, **overrides})))
                       for label, overrides in {"tuned": {}, **job["variants"]}.items()}
            ref = fns["tuned"](*args)[0].float()
            diffs = {label: (fn(*args)[0].float() - ref).abs().max().item() for label, fn in fns.items()}
            runs = {label: (lambda fn=fn: fn(*args)) for label, fn in fns.items()}

            def cudnn():
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, scale=0.125)
            runs["cudnn"] = cudnn
            med = {label: statistics.median(t) for label, t in timer.device_rounds(runs, rounds=7).items()}
            print(json.dumps({"dtype": job["dtype"], "B": b, "H": h, "S": s,
                              "us": {label: round(t, 1) for label, t in med.items()},
                              "x tuned": {label: round(med["tuned"] / t, 3) for label, t in med.items()},
                              "max diff vs tuned": diffs}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--write-jobs":
        json.dump(JOBS, open("scratch/attention_d64_ws_jobs.json", "w"), indent=1)
    else:
        main()
