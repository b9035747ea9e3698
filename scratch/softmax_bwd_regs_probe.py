"""Probe (CPU, cross-compiled for sm_90 with ptxas): registers and spills of the softmax backward's whole-row
kernel at 32000 columns, 32 and 16 warps: the library's kernel with and without `reload_rows`, and a
variant whose source holds y and dy in the input dtype and converts them at each use. Run:
python scratch/softmax_bwd_regs_probe.py (without TRITON_INTERPRET)."""
import sys, torch
sys.path.insert(0, ".")
import build_tools.dsl as helion
import build_tools.dsl.language as hl
from build_tools.cross_compile import cross_compile
from kernels_src import softmax


@helion.kernel(static_shapes=False)
def bwd_held_in_input_dtype(grad_out: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    m, n = out.size()
    grad_in = out.new_empty((m, n))
    for tile_m in hl.tile(m):
        y = out[tile_m, :]
        dy = grad_out[tile_m, :]
        row_dot = torch.sum(dy.to(torch.float32) * y.to(torch.float32), dim=1, keepdim=True)
        grad_in[tile_m, :] = (y.to(torch.float32) * (dy.to(torch.float32) - row_dot)).to(grad_in.dtype)
    return grad_in


y = torch.softmax(torch.randn(64, 32000), -1).to(torch.bfloat16)
dy = torch.randn(64, 32000).to(torch.bfloat16)
for warps in (32, 16):
    cfg = {"block_sizes": [1], "num_warps": warps}
    for c in cross_compile(bwd_held_in_input_dtype.bind((dy, y)), (dy, y), cfg):
        print("held in bf16", warps, c.name, c.ptxas_info())
    b = softmax.softmax_bwd.bind((dy, y, torch.bfloat16))
    base = {"two_pass_rows": False, "num_warps": warps}
    for reload in (False, True):
        conf = b.config_spec.normalize(helion.Config({**b.config_spec.default_config(), **base, "reload_rows": reload}))
        for c in cross_compile(b, (dy, y, torch.bfloat16), conf):
            if c.name.startswith("_softmax_bwd_kernel"):
                print("library reload" if reload else "library", warps, c.name, c.ptxas_info())
