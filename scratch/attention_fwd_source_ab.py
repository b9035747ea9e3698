"""A/B of two generated attention modules (thirty-fourth session: the forward's scale moved into the
exponential's argument, one FMA per score): for each forward suite shape (bf16) the runtime's
variant from the module as built before the change (OLD, a copy of helion_kernels/_generated/
attention.py) and from the current one, with cuDNN beside them, timed in alternating rounds
(benchmarks.timing.Timer, L2 flushed); outputs compared.

    python3 scratch/attention_fwd_source_ab.py OLD_MODULE OUT_DIR [INDEX]

With INDEX, only compiles (runs once) shape INDEX's two kernels, to fill Triton's cache in parallel.
AB_SHAPES (env, "0,3,12") keeps those shapes only.
"""
import importlib.util
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import Timer  # noqa: E402
from helion_kernels import _dispatch  # noqa: E402
from helion_kernels._generated import attention as new_module  # noqa: E402

SHAPES = [(B, H, Hkv, S, D, c) for D in (64, 128) for c in (False, True) for (B, H, Hkv, S) in
          ((4, 32, 32, 1024), (4, 32, 32, 2048), (4, 32, 32, 4096))] + [(16, 16, 16, 512, 64, False),
                                                                         (1, 32, 8, 16384, 128, True),
                                                                         (8, 32, 8, 1024, 128, True)]


def main(old_path: Path, out_dir: Path, only: int | None = None):
    spec = importlib.util.spec_from_file_location("old_attention", old_path)
    old_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old_module)
    timer = Timer(torch.device("cuda"))
    rows = []
    for index, (B, H, Hkv, S, D, causal) in enumerate(SHAPES):
        if only is not None and index != only:
            continue
        if os.environ.get("AB_SHAPES") and str(index) not in os.environ["AB_SHAPES"].split(","):
            continue
        shape = {"B": B, "H": H, "Hkv": Hkv, "Sq": S, "Sk": S, "D": D, "causal": causal}
        decision = _dispatch.DISPATCHER.resolve("attention_fwd", torch.device("cuda"), torch.bfloat16, shape)
        name = decision.launcher.__name__
        g = torch.Generator(device="cuda").manual_seed(0)
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
        scale = D ** -0.5
        fns = {"old": getattr(old_module, name), "new": getattr(new_module, name)}
        runs = {label: (lambda f: lambda: f(q, k, v, causal, scale))(f) for label, f in fns.items()}
        o_old, lse_old = runs["old"]()
        o_new, lse_new = runs["new"]()
        if only is not None:
            continue
        kr, vr = (t.repeat_interleave(H // Hkv, dim=1) for t in (k, v))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)
        runs["cudnn"] = cudnn
        ref = cudnn().float()
        times = timer.device_rounds(runs, rounds=7)
        med = {label: sorted(t)[len(t) // 2] for label, t in times.items()}
        row = {"shape": shape, "variant": name, "us": med, "new_over_old": med["old"] / med["new"],
               "new_over_cudnn": med["cudnn"] / med["new"], "old_over_cudnn": med["cudnn"] / med["old"],
               "max_diff_new_old": (o_new.float() - o_old.float()).abs().max().item(),
               "max_diff_new_cudnn": (o_new.float() - ref).abs().max().item(),
               "max_diff_lse": (lse_new - lse_old).abs().max().item()}
        rows.append(row)
        print(f"{name} B{B} H{H} Hkv{Hkv} S{S} D{D} {'causal' if causal else ''}: old {med['old']:.1f} new "
              f"{med['new']:.1f} cudnn {med['cudnn']:.1f} us; new/old {row['new_over_old']:.3f}x, vs cuDNN "
              f"{row['old_over_cudnn']:.3f} -> {row['new_over_cudnn']:.3f}x; diff {row['max_diff_new_old']:.1e}", flush=True)
    if only is not None:
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "fwd_source_ab.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
