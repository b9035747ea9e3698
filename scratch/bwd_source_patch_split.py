"""Per-kernel CUDA times (torch.profiler) of attention_bwd's generated module under textual patches
of its Gluon source (forty-third session): what a change to the lowering would buy before it is
built. Patches (some make the results wrong on purpose; each row reports its largest difference
from the unpatched module's outputs):
  no_pre_wait  drop the `tma.store_wait(0)` before each store staged in a resident slot;
  no_waits     also drop the wait before a slot's release (racy: an upper bound of the stores' cost);
  skip_diag    (causal) the dk/dv kernel's diagonal loop runs no steps (wrong results);
  reverse_rest the dk/dv kernel's loop that runs to q_len walks its query tiles from the last.

    python3 scratch/bwd_source_patch_split.py JOBS.json [--warm]   (on a GPU)
JOBS: [{"dtype", "shape", ["from_shape"], "patches": [names]}] over tuned_configs/sm_90.json;
--warm runs each job once at B1 H2 (fills Triton's cache).
"""
import json
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from tools.config_probe import _entry, _spec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bwd_variant_kernel_split import kernel_times  # noqa: E402

SLOT_STORE = re.compile(r"\n(\s+)tma\.store_wait\(0\)\n(\s+\w+\.index\(rslot \* GROUPS \+ WG\)\.reshape\(\[[^\]]*\]\)\.store\()")
RELEASE = re.compile(r"\n\s+tma\.store_wait\(0\)\n(\s+mbarrier\.arrive\(resident_empty\.index\(rslot\)\))")


def no_pre_wait(text: str) -> str:
    return SLOT_STORE.sub(r"\n\2", text)


def no_waits(text: str) -> str:
    return RELEASE.sub(r"\n\1", no_pre_wait(text))


def skip_diag(text: str) -> str:
    """The last kernel's (dk/dv) first query loop, in its loader and consumer, made empty."""
    start = text.rindex("_loader(")
    head, tail = text[:start], text[start:]
    tail, n = re.subn(r"for (offset_\d+) in range\((offset_\d+), (v_\d+), _BLOCK_SIZE_3(?:, \d+)?\):",
                      r"for \1 in range(\2, \2, _BLOCK_SIZE_3):", tail, count=1)
    tail, m = re.subn(r"(n_offset_\d+) = gl\.cdiv\(gl\.maximum\(\((v_\d+)\) - \((offset_\d+)\), 0\), _BLOCK_SIZE_3\)",
                      r"\1 = 0", tail, count=1)
    assert n == 1 and m == 1, (n, m)
    return head + tail


def reverse_rest(text: str) -> str:
    """The last kernel's query loop ending at q_len, in its loader and consumer, walked backwards."""
    start = text.rindex("_loader(")
    head, tail = text[:start], text[start:]
    loop = re.search(r"\n(\s+)for (offset_\d+) in range\((\w+), q_len, _BLOCK_SIZE_3\):\n(\s+)", tail)
    indent, name, begin, body = loop.groups()
    count = f"gl.cdiv(gl.maximum(q_len - {begin}, 0), _BLOCK_SIZE_3)"
    tail = (tail[:loop.start()] + f"\n{indent}for rev_{name} in range(0, {count}):\n{body}"
            f"{name} = {begin} + ({count} - 1 - rev_{name}) * _BLOCK_SIZE_3\n{body}" + tail[loop.end():])
    n_name = f"n_{name}"
    assert f"{n_name} = gl.cdiv(gl.maximum((q_len) - ({begin}), 0), _BLOCK_SIZE_3)" in tail
    first, steady = f"{name} = {begin}\n", f"{name} = {begin} + jj * _BLOCK_SIZE_3\n"
    assert tail.count(first) == 1 and tail.count(steady) == 1, (tail.count(first), tail.count(steady))
    tail = tail.replace(first, f"{name} = {begin} + ({n_name} - 1) * _BLOCK_SIZE_3\n")
    tail = tail.replace(steady, f"{name} = {begin} + ({n_name} - 1 - jj) * _BLOCK_SIZE_3\n")
    return head + tail


PATCHES = {"base": lambda text: text, "no_pre_wait": no_pre_wait, "no_waits": no_waits, "skip_diag": skip_diag,
           "reverse_rest": reverse_rest}


def main() -> None:
    warm = "--warm" in sys.argv
    table = json.load(open("tuned_configs/sm_90.json"))
    spec = _spec("attention_bwd")
    for job in json.load(open(sys.argv[1])):
        dtype = getattr(torch, job["dtype"])
        entry = _entry(table, "attention_bwd", job["dtype"], job.get("from_shape", job["shape"]))
        shape = {**job["shape"], "B": 1, "H": 2, "Hkv": 2} if warm else job["shape"]
        args = spec.make_inputs(shape, dtype, "cuda", 0)
        spec.kernel.reset()
        bound = spec.kernel.bind(args)
        text = bound.to_triton_code(bound.config_spec.normalize(Config(entry["config"])))
        print(job["dtype"], json.dumps(shape), flush=True)
        reference = None
        for name in ["base", *job["patches"]]:
            patched = PATCHES[name](text)
            fn = getattr(load_module(patched), "attention_bwd")
            outputs = fn(*args)
            reference = reference or outputs
            diff = max((a.float() - b.float()).abs().max().item() for a, b in zip(outputs, reference))
            if warm:
                continue
            times = kernel_times(lambda: fn(*args))
            print(f"   {name:14s} total {sum(t for _, t in times):9.1f} us  " +
                  "  ".join(f"{t:9.1f}" for _, t in times) + f"   max diff {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
