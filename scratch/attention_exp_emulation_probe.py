"""Probe (thirty-fourth session): does computing part of the attention forward's exponentials on the
FMA pipe (a Cody-Waite range reduction and a degree-3 polynomial, as FlashAttention-4 does on
Blackwell) instead of the MUFU unit speed up the D64 forward, where the softmax's exponentials per
tile equal its dot work? The shipped D64 non-causal Triton kernel (the generated module's
_attention_fwd_kernel_c98b156648, B16 H16 S512 D64 entry) is copied with its probability
exponential replaced by an inline-asm function of `pack` consecutive elements per thread, of which
`poly` go through the polynomial. Timed against the unchanged kernel and cuDNN in one process
(benchmarks.timing.Timer, L2 flushed, alternating rounds).

    python3 scratch/attention_exp_emulation_probe.py OUT_DIR
"""
import importlib.util
import json
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import Timer  # noqa: E402

KERNEL = "_attention_fwd_kernel_c98b156648"
# 2^x for x <= 0: t = x + 1.5 * 2^23 rounds x to the nearest integer n (t's low bits hold n),
# f = x - n in [-0.5, 0.5], 2^f by a degree-3 polynomial (minimax, relative error 7.5e-5), and n added to the exponent field.
POLY = """{{ .reg .b32 t{i}, f{i}, p{i}, e{i};
max.f32 f{i}, {x}, 0fC2FC0000;
add.rn.f32 t{i}, f{i}, 0f4B400000;
sub.rn.f32 p{i}, t{i}, 0f4B400000;
sub.rn.f32 f{i}, f{i}, p{i};
fma.rn.f32 p{i}, f{i}, 0f3D61FB53, 0f3E786EE6;
fma.rn.f32 p{i}, p{i}, f{i}, 0f3F31798D;
fma.rn.f32 p{i}, p{i}, f{i}, 0f3F7FFB4A;
shl.b32 e{i}, t{i}, 23;
add.s32 {y}, e{i}, p{i}; }}"""
MUFU = "ex2.approx.ftz.f32 {y}, {x};"


def exp_function(pack: int, poly: int) -> str:
    """A Triton function of one fp32 tensor: `pack` elements per asm call, the last `poly` of them
    through the polynomial."""
    lines = []
    for i in range(pack):
        y, x = f"${i}", f"${pack + i}"
        lines.append((POLY.format(i=i, x=x, y=y) if i >= pack - poly else MUFU.format(x=x, y=y)))
    asm = "\n".join(lines).replace("\n", "\\n")
    constraints = ",".join(["=r"] * pack + ["r"] * pack)
    return (f"@triton.jit\ndef _exp2_{pack}_{poly}(x):\n"
            f"    return tl.inline_asm_elementwise(\"{asm}\", \"{constraints}\", [x], dtype=tl.float32, "
            f"is_pure=True, pack={pack})\n")


def build(variants: dict, path: Path):
    source = Path("helion_kernels/_generated/attention.py").read_text()
    start = source.index(f"def {KERNEL}(")
    end = source.index("\n@_jit_on_first_launch", start)
    body = source[start:end]
    assert body.count("v_33 = tl.exp2(v_32)") == 1 and body.count("v_58 = tl.exp2(v_57)") == 1
    text = ["import triton", "import triton.language as tl", ""]
    for label, (pack, poly) in variants.items():
        name = f"k_{pack}_{poly}"
        if pack:
            text.append(exp_function(pack, poly))
            edited = body.replace("tl.exp2(v_32)", f"_exp2_{pack}_{poly}(v_32)").replace("tl.exp2(v_57)", f"_exp2_{pack}_{poly}(v_57)")
        else:
            edited = body
        text.append("@triton.jit\n" + edited.replace(f"def {KERNEL}(", f"def {name}("))
    path.write_text("\n".join(text))
    spec = importlib.util.spec_from_file_location("exp_probe_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {label: getattr(module, f"k_{pack}_{poly}") for label, (pack, poly) in variants.items()}


def launcher(kernel, q, k, v):
    batch, heads, q_len, dim = q.shape
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, q_len, dtype=torch.float32, device=q.device)
    scale = dim ** -0.5 * 1.4426950408889634
    grid = (triton_cdiv(q_len, 128) * heads * batch,)

    def run():
        kernel[grid](q_len, heads, batch, 1, q, *q.stride(), k.shape[2], k, *k.stride(), scale, v, *v.stride(),
                     out, *out.stride(), lse, *lse.stride(), 128, 64, 64, num_warps=8, num_stages=4)
        return out, lse
    return run


def triton_cdiv(a, b):
    return (a + b - 1) // b


def main(out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = {"shipped (ex2)": (0, 0), "asm ex2, pack 2": (2, 0), "1 of 2 poly": (2, 1),
                "1 of 4 poly": (4, 1), "3 of 8 poly": (8, 3), "all poly": (1, 1)}
    kernels = build(variants, Path("/tmp/exp_probe_kernels.py"))
    timer = Timer(torch.device("cuda"))
    results = []
    for B, H, S in ((16, 16, 512), (4, 32, 1024), (4, 32, 4096), (4, 32, 8192)):
        for dtype in (torch.bfloat16,):
            g = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(B, H, S, 64, device="cuda", dtype=dtype, generator=g) for _ in range(3))
            ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
            runs, errors = {}, {}
            for label, kernel in kernels.items():
                run = launcher(kernel, q, k, v)
                o, _ = run()
                errors[label] = (o.double() - ref).abs().max().item()
                runs[label] = run

            def cudnn():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v)
            runs["cudnn"] = cudnn
            errors["cudnn"] = (cudnn().double() - ref).abs().max().item()
            times = timer.device_rounds(runs, rounds=7)
            med = {label: sorted(t)[len(t) // 2] for label, t in times.items()}
            base = med["shipped (ex2)"]
            print(f"B{B} H{H} S{S} D64 {str(dtype)[6:]}")
            for label in sorted(med, key=med.get):
                print(f"   {label:20s} {med[label]:9.2f} us  {base / med[label]:.3f}x of shipped  "
                      f"{med['cudnn'] / med[label]:.3f}x of cuDNN  max err {errors[label]:.2e}")
            results.append({"shape": [B, H, S, 64], "dtype": str(dtype), "us": med, "max_err": errors})
    (out_dir / "exp_emulation_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
