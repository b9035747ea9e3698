"""Probe: the GPU tests' random configs (tests/kernels: config_spec.random_config(seed) for seeds 11
and 23) run one by one, each in its own process, so that an illegal memory access names its
config instead of failing every later test of a pytest worker. A failing case runs again with
`persistent_flattens` all False and `store_subtiles` all 1 (the fourteenth session's knobs), and
with `range_warp_specializes` all None, to see which knob it needs.
Run: python3 scratch/random_config_sweep.py [OUT.json]   (one case: --case JSON; a failing case with
one knob at a time back at the default config's value: --bisect JSON; cases with overrides from a file:
--cases FILE.json)"""
import concurrent.futures, json, os, subprocess, sys
sys.path.insert(0, ".")

ROWS = [(1, 4096), (4097, 4096), (1000, 8192), (33, 16384), (64, 262144), (5, 300001)]
SOFTMAX_ROWS = [(1, 32000), (4097, 4096), (1000, 8192), (7, 50257), (64, 131072), (8, 262144), (3, 300001)]


def _attention(b, h, hkv, sq, sk, d, causal, scale=None):
    shape = {"B": b, "H": h, "Hkv": hkv, "Sq": sq, "Sk": sk, "D": d, "causal": causal}
    return {**shape, "scale": scale} if scale is not None else shape


CASES = {
    "rms_norm_fwd": [{"M": m, "N": n} for m, n in ROWS],
    "rms_norm_bwd": [{"M": m, "N": n} for m, n in ROWS],
    "rms_norm_noweight_fwd": [{"M": m, "N": n} for m, n in ROWS[:4]],
    "rms_norm_noweight_bwd": [{"M": m, "N": n} for m, n in ROWS[:4]],
    "softmax_fwd": [{"M": m, "N": n} for m, n in SOFTMAX_ROWS],
    "softmax_bwd": [{"M": m, "N": n} for m, n in SOFTMAX_ROWS],
    "attention_fwd": [_attention(2, 8, 8, 1024, 1024, 128, False), _attention(2, 8, 8, 1024, 1024, 128, True),
                      _attention(1, 32, 8, 2048, 2048, 128, True), _attention(2, 4, 2, 1500, 1000, 64, True),
                      _attention(2, 4, 1, 1000, 1500, 64, True), _attention(1, 6, 3, 777, 555, 64, False, 0.3),
                      _attention(3, 2, 2, 1, 4097, 128, False), _attention(1, 4, 4, 300, 301, 96, True)],
}
DTYPES = ("float32", "bfloat16")
SEEDS = (11, 23)
RESETS = {"no new knobs": {"persistent_flattens": False, "store_subtiles": 1},
          "no warp specialization": {"range_warp_specializes": None}}


def run_case(case: dict) -> dict:
    import torch
    import kernels_src
    from build_tools.dsl.config import Config

    spec = next(s for s in kernels_src.ALL_OPS if s.name == case["op"])
    dtype = getattr(torch, case["dtype"])
    device = os.environ.get("SWEEP_DEVICE", "cuda")  # "cpu" (with TRITON_INTERPRET=1) for a smoke run
    args = spec.make_inputs(case["shape"], dtype, device, 0)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    config = bound.config_spec.random_config(case["seed"])
    fields = config.to_dict()
    for name, value in case.get("reset", {}).items():
        if name in fields:
            fields[name] = [value] * len(fields[name])
    fields.update(case.get("override", {}))
    config = bound.config_spec.normalize(Config(fields))
    result = {**case, "config": config.to_dict()}
    try:
        outputs = bound.compile_config(config)(*args)
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        if device == "cuda":
            torch.cuda.synchronize()
        expected = spec.reference(*[a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        rtol, atol = spec.tolerance(dtype)
        worst = 0.0
        for got, want in zip(outputs, expected):
            excess = ((got.double() - want.double()).abs() - atol - rtol * want.double().abs()).max().item()
            worst = max(worst, excess)
        result["status"] = "ok" if worst <= 0 else f"mismatch: tolerance exceeded by {worst:.3g}"
    except Exception as error:  # reported, not raised: the sweep goes on
        result["status"] = f"{type(error).__name__}: {str(error)[:300]}"
    return result


def in_subprocess(case: dict) -> dict:
    done = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {**case, "status": f"crashed: {done.stderr[-300:]}"}


def bisect(case: dict) -> list:
    """The failing `case` again with one knob at a time set to the default config's value."""
    import torch
    import kernels_src

    spec = next(s for s in kernels_src.ALL_OPS if s.name == case["op"])
    args = spec.make_inputs(case["shape"], getattr(torch, case["dtype"]), "cpu", 0)
    spec.kernel.reset()
    bound = spec.kernel.bind(args)
    drawn, default = bound.config_spec.random_config(case["seed"]).to_dict(), bound.config_spec.default_config().to_dict()
    return [{**case, "override": {name: default[name]}, "label": f"default {name}"}
            for name in sorted(drawn) if drawn[name] != default.get(name, drawn[name])]


def main():
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(run_case(json.loads(sys.argv[2]))), flush=True)
        return
    if sys.argv[1] in ("--bisect", "--cases"):
        cases = bisect(json.loads(sys.argv[2])) if sys.argv[1] == "--bisect" else json.load(open(sys.argv[2]))
        with concurrent.futures.ThreadPoolExecutor(14) as pool:
            results = list(pool.map(in_subprocess, cases))
        for r in results:
            print(json.dumps({"label": r["label"], "override": r["override"] if len(r["override"]) < 3 else "...",
                              "status": r["status"][:120]}))
        return
    cases = [{"op": op, "shape": shape, "dtype": dtype, "seed": seed}
             for op, shapes in CASES.items() for shape in shapes for dtype in DTYPES for seed in SEEDS]
    with concurrent.futures.ThreadPoolExecutor(14) as pool:
        results = list(pool.map(in_subprocess, cases))
        failed = [r for r in results if r["status"] != "ok"]
        reruns = [{k: r[k] for k in ("op", "shape", "dtype", "seed")} | {"reset": reset, "label": label}
                  for r in failed for label, reset in RESETS.items()]
        results += list(pool.map(in_subprocess, reruns))
    for r in results:
        if r["status"] != "ok" or "reset" in r:
            print(json.dumps({k: r[k] for k in ("op", "shape", "dtype", "seed", "status")} | {"label": r.get("label", "")}))
    print(f"{sum(r['status'] == 'ok' for r in results[:len(cases)])} of {len(cases)} random configs ok", flush=True)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("OUT", "."), "random_config_sweep.json")
    json.dump(results, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
