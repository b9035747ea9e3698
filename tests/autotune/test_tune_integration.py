"""The tuner on the real DSL and kernels_src (Triton interpreter), with a fake timer."""
import json

import pytest
import torch

from build_tools.autotune.accuracy import mismatch
from build_tools.autotune.backend import InProcessBackend
from build_tools.autotune.bench import bind_fresh
from build_tools.autotune.entry import Limits
from build_tools.autotune.plan import smoke_entries
from build_tools.autotune.run import RunOptions, Tuner
from build_tools.autotune.search import SearchSettings
from helion_kernels._variant import variant_id

kernels_src = pytest.importorskip("kernels_src")


def test_smoke_tunes_a_real_op_end_to_end(tmp_path):
    entries = smoke_entries(kernels_src.ALL_OPS, {"rms_norm_fwd"})
    options = RunOptions(
        arch="cpu", out_path=tmp_path / "cpu.json", work_dir=tmp_path / "work", device="cpu",
        device_name="interpreter", with_baselines=False,
        settings=SearchSettings(population=4, generations=1, pattern_rounds=0, max_evaluations=4),
        limits=Limits(finalists=2, rounds=1, per_round=1),
    )
    backend = InProcessBackend("kernels_src:ALL_OPS", "cpu", "autotune_fakes:UnitTimer")
    summary = Tuner(options, entries, backend).run()
    assert not summary.failed and len(summary.finished) == 1

    [entry] = json.loads(options.out_path.read_text())["entries"]
    assert entry["variant"] == variant_id(entry["op"], entry["config"], entry["specialization"])
    op = entries[0].op
    args = op.make_inputs(entry["shape"], torch.float32, "cpu", 1)
    bound = bind_fresh(op.kernel, args)
    assert entry["specialization"] == json.loads(json.dumps(bound.specialization_key()))
    output = bound.compile_config(bound.config_spec.normalize(entry["config"]))(*args)
    rtol, atol = op.tolerance(torch.float32)
    assert mismatch(output, op.reference(*args), rtol, atol) is None
