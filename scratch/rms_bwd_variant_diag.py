"""Diagnose shipped RMSNorm backward variants that fail their GPU test: run each (id, dtypes key)
at the given rows and width, poisoned outputs, and print per output the max error against the
float64 reference, NaN count (unwritten elements) and the first rows/columns off, or the exception.
    python3 scratch/rms_bwd_variant_diag.py WIDTH ROWS[,ROWS] ID:KEY [ID:KEY ...]"""
import sys
import traceback

import torch

sys.path.insert(0, "tests/kernels")
sys.path.insert(0, ".")
from kernel_check import poisoned_allocations, shipped_inputs  # noqa: E402

import kernels_src  # noqa: E402
from helion_kernels._dispatch import DISPATCHER  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
width, rows_list = int(sys.argv[1]), [int(r) for r in sys.argv[2].split(",")]
spec = next(s for s in kernels_src.ALL_OPS if s.name == "rms_norm_bwd")
for item in sys.argv[3:]:
    variant, key = item.split(":")
    for rows in rows_list:
        for seed in range(3):
            args, tol = shipped_inputs(spec, {"M": rows, "N": width}, "bfloat16", key or None, DEVICE, seed)
            try:
                with poisoned_allocations():
                    outs = DISPATCHER.registry.launchers("rms_norm_bwd")[variant](*args)
                if DEVICE == "cuda":
                    torch.cuda.synchronize()
            except Exception:
                print(variant, key, rows, seed, "RAISED", traceback.format_exc()[-1500:])
                continue
            refs = spec.reference(*args)
            refs = refs if isinstance(refs, tuple) else (refs,)
            for name, out, ref in zip(("grad_x", "grad_weight"), outs, refs):
                diff = (out.double() - ref.double()).abs()
                bad = ~(diff <= tol[1] + tol[0] * ref.double().abs())
                where = bad.nonzero()[:5].tolist()
                print(f"{variant} {key} rows={rows} seed={seed} {name} {tuple(out.shape)} {out.dtype}: "
                      f"max err {diff.nan_to_num(float('inf')).max().item():.3g}, nan {out.isnan().sum().item()}, "
                      f"bad {bad.sum().item()} first {where} tol {tol}", flush=True)
