"""Compiles a few corpus kernels on the GPU and prints Triton's compiler diagnostics on failure."""
import sys
import traceback

import torch

sys.path.insert(0, ".")
from tests.dsl import test_compat, test_control_flow  # noqa: E402

cases = [
    ("softmax_two_pass", test_compat.softmax_two_pass, (torch.randn(20, 300, device="cuda"),)),
    ("matmul_bias_on_first_k", test_control_flow.matmul_bias_on_first_k,
     (torch.randn(20, 70, device="cuda"), torch.randn(70, 18, device="cuda"), torch.randn(18, device="cuda"))),
]
for name, kernel, args in cases:
    bound = kernel.bind(args)
    for label, config in [("default", bound.config_spec.default_config())] + [(f"random{s}", bound.config_spec.random_config(s)) for s in range(6)]:
        try:
            bound.compile_config(config)(*args)
            torch.cuda.synchronize()
            print(name, label, "ok", flush=True)
        except Exception as err:
            print(name, label, "FAILED", config, type(err).__name__, str(err)[:300], flush=True)
            print(bound.to_triton_code(config).split("@triton.jit")[1][:2500], flush=True)
