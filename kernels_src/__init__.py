"""The library's ops written in the DSL, one module per op family; ALL_OPS lists every OpSpec."""
from . import attention, matmul, rms_norm, softmax

ALL_OPS = [*rms_norm.OPS, *softmax.OPS, *matmul.OPS, *attention.OPS]
