"""Turns results.json's data into RESULTS.md (tables, ceilings, bar check) and the PNG plots."""
from __future__ import annotations

from pathlib import Path

GROUPS = [
    (("rmsnorm_fwd", "device"), "RMSNorm forward"),
    (("rmsnorm_bwd", "device"), "RMSNorm backward (autograd: dx and dweight)"),
    (("softmax_fwd", "device"), "Softmax forward"),
    (("softmax_bwd", "device"), "Softmax backward (autograd)"),
    (("rmsnorm_fwd", "host"), "RMSNorm forward, decode-size calls (per-call host time)"),
    (("softmax_fwd", "host"), "Softmax forward, decode-size calls (per-call host time)"),
    (("rmsnorm_fwd", "graph"), "RMSNorm forward, decode-size calls replayed from a CUDA graph (per-call time)"),
    (("softmax_fwd", "graph"), "Softmax forward, decode-size calls replayed from a CUDA graph (per-call time)"),
    (("matmul", "device"), "Matmul (a[M,K] @ b[K,N])"),
    (("attention_fwd", "device"), "Attention forward"),
    (("attention_bwd", "device"), "Attention backward (autograd: dq, dk, dv)"),
]

METHOD = """\
Method: all implementations run in one process, bf16. Kernel times are the median over up to 100
runs (at least 5; fewer than 100 when runs are slow, about 0.3 s per implementation) of CUDA events around each call, after 10
warm-up calls, with L2 flushed before each run by writing a 256 MB buffer, then a GPU-side wait
(`torch.cuda._sleep`) twice as long as the host takes to enqueue the run, so that all of a run's
launches are queued before its start event and its time is the GPU's, also where the host is
slower than the kernels (an autograd backward; the lent hosts' speed varied up to 2x within a
session). A row's implementations take turns over 5 rounds, each round running a fifth of every
implementation's runs, in alternating order, so that drift over the row (clocks, temperature, the
order the peers are listed in) favours none. Decode-size tables and the
dispatch overhead use host time instead: the per-call time of a loop of 1000 calls ended by a
synchronize, which includes Python and launch overhead; a row's implementations alternate loop by
loop over 11 rounds (15 in the dispatch table) and each time is the median of its rounds. Shapes
M×1×N are 3-D inputs, as a model's decode step passes its activations. The CUDA-graph decode
tables time 100 back-to-back calls captured in one graph (after warm-up calls on a side stream):
the median of 20 replays (CUDA events) divided by 100, the GPU time per call as a caller that
captures its decode step sees it (no host time; the inputs stay in L2 between calls). GB/s and TFLOP/s use
the minimum bytes and flops of the kernel sources' cost models (`kernels_src`, causal attention
counts only the visible half); "% ceiling" divides by the copy bandwidth (memory-bound ops) or by
cuBLAS at 4096³ (matmul, attention); "% same-size copy" is the time of a copy moving the same
bytes divided by the implementation's time (how near a transfer of that size gets to the ceiling,
which a 1 GiB copy measures). "ours ×" is the peer's time divided by ours (above 1: ours is
faster). Backward rows time `torch.autograd.grad(out, inputs, grad, retain_graph=True)` on a
forward run once outside the timed region, so every implementation's own backward runs (Liger's
RMSNorm backward is in place, as its module uses it). Ours runs through the public API
(`hk.rmsnorm`, `hk.softmax`, `hk.matmul`, `hk.scaled_dot_product_attention`); torch.compile is the
default mode on `F.rms_norm`/`torch.softmax`, `dynamic=False` (matmul: mode
max-autotune-no-cudagraphs only, at 4096³, when the budget leaves room; default mode would be cuBLAS);
attention peers are SDPA with one backend forced (`sdpa_kernel`)."""


def shape_label(shape: dict) -> str:
    if "B" in shape:
        text = f"B{shape['B']} H{shape['H']} S{shape['Sq']} D{shape['D']}"
        if shape["Hkv"] != shape["H"]:
            text += f" Hkv{shape['Hkv']}"
        if shape["Sk"] != shape["Sq"]:
            text += f" Sk{shape['Sk']}"
        return text + (" causal" if shape["causal"] else "")
    return "×".join(str(v) for v in shape.values())


def case_label(record: dict) -> str:
    """The shape, and the other argument dtypes of a mixed-dtype row (plan.Row.dtypes)."""
    dtypes = record.get("dtypes")
    return shape_label(record["shape"]) + (f" ({dtypes})" if dtypes else "")


def _sort_key(shape: dict) -> tuple:
    if "B" in shape:
        return shape["D"], shape["causal"], shape["B"], shape["H"], shape["Hkv"], shape["Sq"], shape["Sk"]
    return tuple(shape.values())


def _num(value, digits=1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _case_table(records: list, title: str) -> list:
    """One row per (shape, impl); host-timed groups show per-call µs only (no bandwidth)."""
    cases = {}
    for r in records:
        cases.setdefault((tuple(r["shape"].items()), r.get("dtypes", "")), []).append(r)
    unit = next((r["unit"] for r in records if r.get("unit")), None)
    same_copy = any("pct_same_copy" in r for r in records)
    rate_cols = (f" {unit} | % ceiling |" + (" % same-size copy |" if same_copy else "")) if unit else ""
    rate_align = ("---:|---:|" + ("---:|" if same_copy else "")) if unit else ""
    lines = [f"## {title}", "", f"| shape | impl | µs |{rate_cols} ours × | notes |",
             "|---|---|---:|" + rate_align + "---:|---|"]
    for key in sorted(cases, key=lambda k: (k[1], _sort_key(dict(k[0])))):
        rows = cases[key]
        ours = next((r for r in rows if r["impl"] == "ours" and r["status"] == "ok"), None)
        for r in rows:
            if r["status"] != "ok":
                lines.append(f"| {case_label(r)} | {r['impl']} | {r['status']} |"
                             + (" | |" + (" |" if same_copy else "") if unit else "") + " | |")
                continue
            speedup = f"{r['us'] / ours['us']:.2f}x" if ours and r is not ours else ""
            notes = "; ".join(filter(None, (r.get("note", ""), r.get("resources", "")))) if r["impl"] == "ours" else ""
            if "max_abs_diff_vs_ours" in r:
                notes = f"max abs diff vs ours {r['max_abs_diff_vs_ours']:.3g}"
            rates = f" {_num(r.get('rate'))} | {_num(r.get('pct'))} |" if unit else ""
            if unit and same_copy:
                rates += f" {_num(r.get('pct_same_copy'))} |"
            lines.append(f"| {case_label(r)} | {r['impl']} | {_num(r['us'])} |{rates} {speedup} | "
                         f"{notes.replace('|', '/')} |")
    return lines + [""]


def _dispatch_table(records: list) -> list:
    lines = ["## Dispatch overhead (host loop of 1000 calls, M=1)", "",
             "| op | impl | µs per call | notes |", "|---|---|---:|---|"]
    for r in records:
        note = r.get("note", "")
        if "overhead_us" in r:
            note = f"{r['overhead_us']:+.2f} µs above the launcher (median of the rounds' differences)"
        lines.append(f"| {r['op'].removeprefix('dispatch_')} | {r['impl']} | "
                     f"{_num(r.get('us'), 2) if r['status'] == 'ok' else r['status']} | {note} |")
    return lines + ["", "api = `hk.rmsnorm(x, w, eps)` / `hk.softmax(x, -1)`; launcher = the generated "
                    "launcher the dispatcher selected, called with the same arguments; eager = PyTorch. "
                    "The three loops alternate over 15 rounds (medians shown); the overhead is the median "
                    "of each round's api minus launcher time.", ""]


def _first_call_table(records: list) -> list:
    lines = ["## First call in a fresh process", "",
             "| op | Triton cache | status | import s | first call ms | second call ms |",
             "|---|---|---|---:|---:|---:|"]
    for r in records:
        lines.append(f"| {r['impl']} | {r.get('mode', '')} | {r['status']} | {_num(r.get('import_s'), 2)} | "
                     f"{_num(r.get('first_ms'))} | {_num(r.get('second_ms'), 2)} |")
    return lines + ["", "Each op runs in a new `python -c` process (bf16, 4096×4096 inputs; attention "
                    "B1 H8 S4096 D128 causal); cold = empty TRITON_CACHE_DIR, warm = the cache the cold "
                    "run filled. The processes of one round run side by side.", ""]


def _missed_link(target: str) -> str:
    return ("Why each missed bar is missed (profile evidence: achieved bandwidth, registers, spills, "
            f"host time) and the next step for each: [MISSED.md]({target}), written for the run it names.")


def markdown(data: dict) -> str:
    meta, ceilings, records = data["meta"], data["ceilings"], data["records"]
    lines = ["# helion_kernels benchmarks", "",
             f"Device: **{meta['device']}**; torch {meta['torch']}, triton {meta['triton']}, "
             f"helion_kernels {meta['helion_kernels']} (commit {meta['commit']}), Liger-Kernel "
             f"{meta['liger_kernel']}, Python {meta['python']}; {meta['date']}; dtype {meta['dtype']}; "
             f"budget {meta['budget_s']:.0f} s" + (" (tiny CPU dry run)" if meta["tiny"] else "")
             + ("" if data["finished"] else "; **run incomplete**")
             + (f"; only the rows {', '.join(meta['only'])}" if meta.get("only") else ""), ""]
    if "copy_GBps" in ceilings:
        lines.append(f"Ceilings: device-to-device copy **{ceilings['copy_GBps']:,.0f} GB/s** (bytes read + "
                     f"written, {ceilings['copy_bytes'] >> 20} MiB copied); cuBLAS bf16 "
                     f"**{ceilings['cublas_TFLOPs']:,.1f} TFLOP/s** at {ceilings['cublas_n']}³.")
    else:
        lines.append(f"Ceilings: {ceilings.get('status', 'not measured')}")
    lines += ["", METHOD, "", "## Bar check", "", "| bar | result | detail |", "|---|---|---|"]
    lines += [f"| {b['bar']} | {b['result']} | {b['detail']} |" for b in data["bars"]]
    lines += ["", _missed_link(meta.get("missed", "MISSED.md")), ""]
    lines += [f"![{name}]({name})" for name in data.get("plots", [])] + [""]
    for (op, mode), title in GROUPS:
        group = [r for r in records if r["op"] == op and r.get("mode") == mode]
        if group:
            lines += _case_table(group, title)
    dispatch = [r for r in records if r["op"].startswith("dispatch_")]
    if dispatch:
        lines += _dispatch_table(dispatch)
    first = [r for r in records if r["op"] == "first_call"]
    if first:
        lines += _first_call_table(first)
    return "\n".join(lines)


def _series(records, op, x_key, match):
    """{impl: sorted [(x, rate)]} of the successful plotted records of one op."""
    series = {}
    for r in records:
        if r["op"] == op and r.get("plot") and r["status"] == "ok" and match(r["shape"]):
            series.setdefault(r["impl"], []).append((r["shape"][x_key], r["rate"]))
    return {impl: sorted(points) for impl, points in series.items()}


COLORS = {"ours": "tab:red", "eager": "tab:blue", "compile": "tab:orange", "liger": "tab:green",
          "cudnn": "tab:purple", "flash": "tab:blue", "efficient": "tab:brown"}


def _panel(ax, series, title, xlabel, ylabel, ceiling=None, ceiling_label=""):
    for impl, points in sorted(series.items()):
        ax.plot(*zip(*points), marker="o", label=impl, color=COLORS.get(impl),
                linewidth=2.5 if impl == "ours" else 1.2)
    if ceiling:
        ax.axhline(ceiling, color="gray", linestyle="--", label=ceiling_label)
    ax.set_xscale("log", base=2)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=7)



def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported when a plot is drawn (the `bench` extra), so
    the rest of the report imports without it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt

def _bandwidth_plot(data, path: Path):
    records, ceiling = data["records"], data["ceilings"].get("copy_GBps")
    rows = max((r["shape"]["M"] for r in records if r.get("plot") == "bandwidth"), default=0)
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for ax, op in zip(axes.flat, ("rmsnorm_fwd", "softmax_fwd", "rmsnorm_bwd", "softmax_bwd")):
        series = _series(records, op, "N", lambda s: s.get("M") == rows)
        _panel(ax, series, f"{op} (M={rows}, bf16)", "hidden size N", "GB/s", ceiling, "copy ceiling")
    fig.suptitle(f"Achieved bandwidth vs hidden size — {data['meta']['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _attention_plot(data, path: Path):
    records = [r for r in data["records"] if r.get("plot") == "attention"]
    dims = sorted({r["shape"]["D"] for r in records}, reverse=True)[:2]
    plt = _pyplot()
    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    panels = [(d, c) for d in dims for c in (False, True)]
    for row, op in enumerate(("attention_fwd", "attention_bwd")):
        for col, (dim, causal) in enumerate(panels):
            series = _series(records, op, "Sq", lambda s: s["D"] == dim and s["causal"] == causal)
            _panel(axes[row][col], series, f"{op} D{dim} {'causal' if causal else 'full'}",
                   "sequence length", "TFLOP/s")
    fig.suptitle(f"Attention TFLOP/s vs sequence length (causal flops halved) — {data['meta']['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plots(data: dict, out: Path) -> list:
    """Write the PNGs into `out`; returns their file names."""
    _bandwidth_plot(data, out / "bandwidth.png")
    _attention_plot(data, out / "attention.png")
    return ["bandwidth.png", "attention.png"]
