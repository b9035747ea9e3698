"""Generated Triton modules, one per kernels_src family (written by `python -m build_tools generate`)."""

# op -> the module of its family (the runtime imports a family on its first use)
FAMILIES = {
    "attention_bwd": "attention",
    "attention_fwd": "attention",
    "bmm": "matmul",
    "linear": "matmul",
    "matmul": "matmul",
    "rms_norm_bwd": "rms_norm",
    "rms_norm_fwd": "rms_norm",
    "rms_norm_noweight_bwd": "rms_norm",
    "rms_norm_noweight_fwd": "rms_norm",
    "softmax_bwd": "softmax",
    "softmax_fwd": "softmax"
}
