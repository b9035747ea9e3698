"""On the GPU: a short real tuning run of one op and shape (CUDA events, worker processes)."""
import json

import pytest
import torch

from build_tools.autotune.backend import ProcessBackend
from build_tools.autotune.entry import Limits
from build_tools.autotune.plan import Entry
from build_tools.autotune.run import RunOptions, Tuner
from build_tools.autotune.search import SearchSettings
from helion_kernels._variant import variant_id

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_tune_one_real_entry_on_the_gpu(tmp_path):
    kernels_src = pytest.importorskip("kernels_src")
    op = next(o for o in kernels_src.ALL_OPS if o.name == "rms_norm_fwd")
    entries = [Entry(op, torch.bfloat16, {"M": 4096, "N": 4096})]
    options = RunOptions(
        arch="gpu_test", out_path=tmp_path / "gpu_test.json", work_dir=tmp_path / "work", device="cuda",
        device_name=torch.cuda.get_device_name(), settings=SearchSettings(max_evaluations=12, time_limit_s=60),
        limits=Limits(),
    )
    backend = ProcessBackend(2, "kernels_src:ALL_OPS", "cuda", "build_tools.autotune.timing:CudaEventTimer")
    try:
        summary = Tuner(options, entries, backend).run()
    finally:
        backend.close()
    assert not summary.failed, summary.failed
    [entry] = json.loads(options.out_path.read_text())["entries"]
    assert entry["variant"] == variant_id(entry["op"], entry["config"], entry["specialization"])
    assert 0 < entry["us"] < 10_000
    assert entry["baseline_us"]["eager"] > 0 and entry["baseline_us"]["compile"] > 0
