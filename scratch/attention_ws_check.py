"""Check: the attention forward's warp-specialized configs (scratch/attention_ws_jobs.json, applied
to the table entry they name; causal or not as the entry) against a float64 reference at sequence
lengths the key block does and does not divide, query and key lengths equal and not, on a GPU
(Triton 3.6's Hopper warp specialization has given wrong results for some loops). Outputs are
poisoned. Prints the max error of out and lse per config and shape, and the op's tolerance.
Run: python3 scratch/attention_ws_check.py [JOBS.json] [TABLE]"""
import json, sys
sys.path.insert(0, ".")
import torch
from build_tools.dsl.config import Config
from tools.config_probe import _entry, _spec


def main():
    jobs = json.load(open(sys.argv[1] if len(sys.argv) > 1 else "scratch/attention_ws_jobs.json"))
    table = json.load(open(sys.argv[2] if len(sys.argv) > 2 else "tuned_configs/sm_90.json"))
    spec = _spec("attention_fwd")
    g = torch.Generator(device="cuda").manual_seed(0)
    for job in jobs:
        entry = _entry(table, job["op"], job["dtype"], job["shape"])
        dtype = getattr(torch, job["dtype"])
        rtol, atol = spec.tolerance(dtype)
        causal = job["shape"]["causal"]
        d = job["shape"]["D"]
        for b, h, sq, sk in [(2, 3, 4096, 4096), (2, 3, 1000, 1000), (1, 2, 77, 77), (3, 2, 129, 129), (1, 1, 1, 1),
                             (1, 3, 2048, 2048), (2, 3, 1000, 777), (1, 2, 300, 1200)]:
            q = torch.randn(b, h, sq, d, device="cuda", dtype=dtype, generator=g)
            k, v = (torch.randn(b, h, sk, d, device="cuda", dtype=dtype, generator=g) for _ in range(2))
            args = (q, k, v, causal, d ** -0.5)
            ref, ref_lse = spec.reference(*args)
            spec.kernel.reset()
            bound = spec.kernel.bind(args)
            for label, overrides in {"tuned": {}, **job["variants"]}.items():
                config = bound.config_spec.normalize(Config({**entry["config"], **overrides}))
                # poison the blocks the launcher's outputs will reuse, so unwritten elements show
                torch.full((b * h * sq * d,), float("nan"), device="cuda", dtype=dtype)
                torch.full((b * h * sq,), float("nan"), device="cuda", dtype=torch.float32)
                try:
                    out, lse = bound.compile_config(config)(*args)
                    err = (out.double() - ref).abs().max().item()
                    lse_err = (lse.double() - ref_lse).abs().max().item()
                    ok = torch.allclose(out.double(), ref, rtol=rtol, atol=atol) and \
                        torch.allclose(lse.double(), ref_lse, rtol=rtol, atol=atol)
                except Exception as error:  # a config that does not compile is reported
                    err, lse_err, ok = f"{type(error).__name__}: {str(error)[-150:]}", None, False
                print(json.dumps({"shape": [b, h, sq, sk, d], "config": label, "max_err": err, "lse_err": lse_err,
                                  "ok": ok, "atol": atol}), flush=True)


if __name__ == "__main__":
    main()
