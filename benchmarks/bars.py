"""The issue's bars, checked against the measured records: met / missed / not measured, and by how much."""
from __future__ import annotations

import math

LARGE_ELEMENTS = 16384 * 4096   # "large sizes": at least the DESIGN.md reference tensor
LONG_ROWS = (131072, 262144)


def _ok(records, **match):
    """The successful records matching `match`; the bars read the bf16 rows (mixed-dtype rows: none)."""
    match.setdefault("dtypes", None)
    return [r for r in records if r.get("status") == "ok" and all(r.get(k) == v for k, v in match.items())]


def _cases(records, op, mode="device"):
    """{shape key: {impl: record}} of the successful records of one op."""
    cases = {}
    for r in _ok(records, op=op, mode=mode):
        cases.setdefault(tuple(sorted(r["shape"].items())), {})[r["impl"]] = r
    return cases


def _label(key) -> str:
    return "×".join(str(v) for _, v in key) if all(k in "MNK" for k, _ in key) else \
        " ".join(f"{k}{v}" for k, v in key)


def _bar(name, values, passes, describe):
    """A bar over measured (value, case label) pairs: met when every value passes; the detail names
    the worst case and the cases that missed."""
    if not values:
        return {"bar": name, "result": "not measured", "detail": "no successful measurement"}
    failing = [v for v in values if not passes(v)]
    worst = min(values, key=lambda v: v[0])
    detail = f"worst {describe(worst)}"
    if failing:
        detail += f"; missed at {len(failing)}/{len(values)}: " + ", ".join(v[1] for v in failing[:6])
    return {"bar": name, "result": "missed" if failing else "met", "detail": detail}


def _pct_bar(name, records, ops, floor, select):
    """Percent of the copy ceiling; the worst case also gives its percent of a same-size copy."""
    values = [(r["pct"], f"{op} {_label(tuple(r['shape'].items()))}", r.get("pct_same_copy"))
              for op in ops for r in _ok(records, op=op, mode="device", impl="ours")
              if r.get("pct") is not None and select(r["shape"])]
    return _bar(name, values, lambda v: v[0] >= floor,
                lambda v: f"{v[0]:.1f}% of copy bandwidth at {v[1]} (bar {floor}%"
                + (f"; {v[2]:.1f}% of a copy of the same bytes)" if v[2] else ")"))


def _ahead_bar(name, records, ops, mode="device", peers=None):
    """Ours vs the best peer per case: value = best peer µs / our µs (>= 1 is ahead)."""
    values = []
    for op in ops:
        for key, impls in _cases(records, op, mode).items():
            rivals = [r["us"] for impl, r in impls.items() if impl != "ours" and (peers is None or impl in peers)]
            if "ours" in impls and rivals:
                values.append((min(rivals) / impls["ours"]["us"], f"{op} {_label(key)}"))
    rival = "/".join(peers) if peers else "the best peer"
    return _bar(name, values, lambda v: v[0] >= 1.0,
                lambda v: f"{v[0]:.2f}x the speed of {rival} at {v[1]}")


def _dispatch_bar(records):
    name = "dispatch overhead < 2 µs above the raw launcher (host loop, M=1)"
    overheads = {}
    for family in ("rmsnorm", "softmax"):
        api = _ok(records, op=f"dispatch_{family}", impl="api")
        raw = _ok(records, op=f"dispatch_{family}", impl="launcher")
        if api and raw:
            overheads[family] = api[0].get("overhead_us", api[0]["us"] - raw[0]["us"])
    if not overheads:
        return {"bar": name, "result": "not measured", "detail": "no successful measurement"}
    worst = max(overheads, key=overheads.get)
    return {"bar": name, "result": "met" if overheads[worst] < 2.0 else "missed",
            "detail": ", ".join(f"{f}: {o:+.2f} µs" for f, o in overheads.items())}


def _matmul_bar(records):
    ratios = [impls["cublas"]["us"] / impls["ours"]["us"]
              for impls in _cases(records, "matmul").values() if "ours" in impls and "cublas" in impls]
    if not ratios:
        return {"bar": "matmul geomean >= 1.0x cuBLAS", "result": "not measured", "detail": ""}
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return {"bar": "matmul geomean >= 1.0x cuBLAS", "result": "met" if geomean >= 1.0 else "missed",
            "detail": f"geomean {geomean:.2f}x cuBLAS over {len(ratios)} shapes (worst {min(ratios):.2f}x)"}


def check(data: dict) -> list:
    records = data["records"]
    large = 0 if data["meta"].get("tiny") else LARGE_ELEMENTS

    def is_large(shape):
        return shape["M"] * shape["N"] >= large

    def is_long(shape):
        return shape["N"] in LONG_ROWS or (data["meta"].get("tiny") and shape["N"] >= 1024)

    return [
        _pct_bar("RMSNorm & softmax fwd >= 95% of copy bandwidth at large sizes", records,
                 ("rmsnorm_fwd", "softmax_fwd"), 95, is_large),
        _ahead_bar("RMSNorm & softmax fwd ahead of the best peer at every measured shape", records,
                   ("rmsnorm_fwd", "softmax_fwd")),
        _pct_bar("RMSNorm & softmax bwd >= 90% of copy bandwidth at large sizes", records,
                 ("rmsnorm_bwd", "softmax_bwd"), 90, is_large),
        _pct_bar("softmax 131072/262144-wide rows >= 90% of copy bandwidth", records,
                 ("softmax_fwd", "softmax_bwd"), 90, is_long),
        _ahead_bar("decode-size calls no slower than eager (per-call host time)", records,
                   ("rmsnorm_fwd", "softmax_fwd"), mode="host", peers=("eager",)),
        _ahead_bar("(supplementary, not a bar of the issue) decode-size calls replayed from a CUDA graph "
                   "no slower than eager's", records, ("rmsnorm_fwd", "softmax_fwd"), mode="graph", peers=("eager",)),
        _dispatch_bar(records),
        _matmul_bar(records),
        _ahead_bar("attention fwd >= cuDNN TFLOP/s", records, ("attention_fwd",), peers=("cudnn",)),
        _ahead_bar("attention bwd >= cuDNN TFLOP/s", records, ("attention_bwd",), peers=("cudnn",)),
    ]
