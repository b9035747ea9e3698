"""A/B of the Gluon kernels' unspecialized loop bounds (gluon_lowering._loop_bound_params): each
case's lowered module as generated (`@gluon.jit(do_not_specialize=[...])`) against the same source
with a plain `@gluon.jit` (Triton then specializes those sizes on 1 and on divisibility by 16),
timed in alternating rounds by the report's timer (bf16, H100 table configs).

    python3 scratch/gluon_unspecialized_ab.py   (on a Hopper GPU)
"""
import json
import re
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing import Timer  # noqa: E402
from build_tools.dsl.config import Config  # noqa: E402
from build_tools.dsl.kernel import load_module  # noqa: E402
from kernels_src.attention import attention_bwd, attention_fwd, make_bwd_inputs, make_fwd_inputs  # noqa: E402
from tools.config_probe import _device_header, _entry, with_siblings  # noqa: E402

TABLE = Path("tuned_configs/sm_90-nvidia-h100-80gb-hbm3.json")
MIXED = {"backend": ["gluon", "triton"], "consumer_groups": 2, "num_stages": 3}


def shape(batch, heads, kv_heads, length, causal):
    return {"B": batch, "H": heads, "Hkv": kv_heads, "Sq": length, "Sk": length, "D": 128, "causal": causal}


CASES = [("attention_fwd", shape(4, 32, 32, 4096, True), {}), ("attention_fwd", shape(4, 32, 32, 4096, False), {}),
         ("attention_fwd", shape(4, 32, 32, 1024, True), {}),
         ("attention_bwd", shape(4, 32, 32, 4096, True), MIXED), ("attention_bwd", shape(4, 32, 32, 4096, False), MIXED)]


def main() -> None:
    table = with_siblings(TABLE, json.loads(TABLE.read_text()), _device_header())
    timer = Timer(torch.device("cuda", 0))
    for op, dims, overrides in CASES:
        kernel, make = (attention_fwd, make_fwd_inputs) if op == "attention_fwd" else (attention_bwd, make_bwd_inputs)
        args = make(dims, torch.bfloat16, "cuda", 0)
        bound = kernel.bind(args)
        config = bound.config_spec.normalize(Config({**_entry(table, op, "bfloat16", dims)["config"], **overrides}))
        source = bound.to_triton_code(config)
        plain = re.sub(r"@gluon\.jit\(do_not_specialize=\[[^\]]*\]\)", "@gluon.jit", source)
        fns = {label: getattr(load_module(text), kernel.name) for label, text in (("unspecialized", source),
                                                                                  ("specialized", plain))}
        outputs = [fn(*args) for fn in fns.values()]
        for a, b in zip(*outputs):
            assert torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-3), op
        times = timer.device_rounds({label: (lambda f: lambda: f(*args))(fn) for label, fn in fns.items()}, rounds=7)
        medians = {label: statistics.median(t) for label, t in times.items()}
        print(op, json.dumps(dims), {k: round(v, 1) for k, v in medians.items()},
              f"specialized/unspecialized time {medians['specialized'] / medians['unspecialized']:.3f}", flush=True)


if __name__ == "__main__":
    main()
