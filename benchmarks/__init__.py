"""GPU benchmarks of helion_kernels against its peers: a pytest-benchmark suite and `python -m benchmarks.report`."""
