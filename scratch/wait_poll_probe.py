"""Probe: how hl.wait's polling costs the split-row softmax. The DSL polls with an acquire atomic
read-modify-write (`tl.atomic_add(p, 0, sem="acquire")`); variants rewrite that loop in the
generated source of the library's kernels (H100 table config) and are timed against it in one
process (benchmarks.timing.Timer: CUDA events, L2 write-flushed, alternating rounds):
- ld: volatile loads poll, then one acquire atomic once the count is reached (the ordering);
- ld_sleep: the same with a 100 ns `nanosleep` between polls;
- atomic_sleep: the DSL's atomic poll with the same sleep.
An experiment (inline PTX: GPU only), not library code."""
import json, os, re, statistics, sys
sys.path.insert(0, ".")
import torch
import kernels_src
from build_tools.autotune.table import load_table
from build_tools.dsl.kernel import load_module
from benchmarks.timing import Timer
from pathlib import Path

POLL = re.compile(r"(?P<ind>[ ]*)(?P<seen>seen_\d+) = tl\.atomic_add\((?P<ptr>.+?), 0, sem='acquire', scope='gpu'\)\n"
                  r"(?P=ind)while (?P=seen) != (?P<target>.+?):\n"
                  r"(?P=ind)    (?P=seen) = tl\.atomic_add\((?P=ptr), 0, sem='acquire', scope='gpu'\)\n")
SLEEP = "tl.inline_asm_elementwise('nanosleep.u32 100;\\n mov.u32 $0, $1;', '=r,r', [{seen}], dtype=tl.int32, is_pure=False, pack=1)"


def rewrite(source: str, variant: str) -> str:
    def poll(m):
        ind, seen, ptr, target = m["ind"], m["seen"], m["ptr"], m["target"]
        atomic = f"tl.atomic_add({ptr}, 0, sem='acquire', scope='gpu')"
        if variant == "atomic_sleep":
            return (f"{ind}{seen} = {atomic}\n{ind}while {seen} != {target}:\n"
                    f"{ind}    {seen} = {SLEEP.format(seen=seen)}\n{ind}    {seen} = {atomic}\n")
        load = f"tl.load({ptr}, volatile=True)"
        sleep = f"{ind}    {seen} = {SLEEP.format(seen=seen)}\n" if variant == "ld_sleep" else ""
        return (f"{ind}{seen} = {load}\n{ind}while {seen} != {target}:\n{sleep}"
                f"{ind}    {seen} = {load}\n{ind}{seen} = {atomic}\n")
    out, count = POLL.subn(poll, source)
    assert count >= 1, "no polling loop found"
    return out


def main():
    table = load_table(Path("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json"))
    timer = Timer(torch.device("cuda"))
    wanted = [("softmax_fwd", {"M": 4096, "N": 131072}), ("softmax_fwd", {"M": 256, "N": 262144}),
              ("softmax_bwd", {"M": 256, "N": 262144}), ("softmax_bwd", {"M": 4096, "N": 131072})]
    rows = []
    for op, shape in wanted:
        entry = next(e for e in table["entries"] if e["op"] == op and e["dtype"] == "bfloat16" and e["shape"] == shape)
        spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
        args = spec.make_inputs(shape, torch.bfloat16, "cuda", 0)
        source = spec.kernel.bind(args).to_triton_code(entry["config"])
        fns = {}
        for variant in ("library", "ld", "ld_sleep", "atomic_sleep"):
            module = load_module(source if variant == "library" else rewrite(source, variant))
            fns[variant] = getattr(module, op)
        ref = fns["library"](*args)
        same = {k: torch.equal(f(*args), ref) for k, f in fns.items()}
        times = {k: [] for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                times[k].append(timer.device_us(lambda: f(*args)))
        row = {"op": op, "shape": shape, "us": {k: statistics.median(v) for k, v in times.items()}, "identical": same}
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "wait_poll_probe.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
