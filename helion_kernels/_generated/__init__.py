"""Generated Triton modules, one per kernels_src family (written by `python -m build_tools generate`)."""
