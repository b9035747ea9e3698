"""The `dependent_launches` knob (one per top-level loop): a loop's kernel launched as a programmatic
dependent launch of the kernel before it. Results must not change, including where a later kernel
reads what an earlier one wrote and where a kernel between them launches no program; the first
loop's kernel takes no such launch; the generated kernels let and wait under a flag the launcher
sets by device (never under the interpreter), and for sm_90 they compile to griddepcontrol steps
(cross-compiled in a process without the interpreter)."""
import json

import pytest
import torch
import triton

import build_tools.dsl as helion
import build_tools.dsl.exc as exc
import build_tools.dsl.language as hl

from ._harness import as_float64, compare, poisoned_allocations, randn, results_without_interpreter


@helion.kernel(static_shapes=False)
def centered_scaled_rows(x: torch.Tensor, skip_middle: bool) -> torch.Tensor:
    """(x - mean of its row) * 1 / (1 + sum of |row|), in three kernels: row sums, the rows' means
    and scales (none when `skip_middle`: its grid is empty, and the last kernel computes them), and
    the output from them."""
    m, n = x.size()
    sums = x.new_empty((m, 2), dtype=torch.float32)
    stats = x.new_empty((m, 2), dtype=torch.float32)
    middle_rows = 0 if skip_middle else m
    for tile_m in hl.tile(m):
        row = x[tile_m, :].to(torch.float32)
        sums[tile_m, 0] = torch.sum(row, dim=1)
        sums[tile_m, 1] = torch.sum(torch.abs(row), dim=1)
    for tile_m in hl.tile(middle_rows):
        stats[tile_m, 0] = sums[tile_m, 0] / n
        stats[tile_m, 1] = 1.0 / (1.0 + sums[tile_m, 1])
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile([m, n]):
        if skip_middle:
            mean = sums[tile_m, 0] / n
            scale = 1.0 / (1.0 + sums[tile_m, 1])
        else:
            mean = stats[tile_m, 0]
            scale = stats[tile_m, 1]
        out[tile_m, tile_n] = ((x[tile_m, tile_n].to(torch.float32) - mean[:, None]) * scale[:, None]).to(out.dtype)
    return out


def reference(x, skip_middle):
    return (x - x.mean(1, keepdim=True)) / (1 + x.abs().sum(1, keepdim=True))


@pytest.mark.parametrize("skip_middle", [False, True])
@pytest.mark.parametrize("launches", [[False, True, True], [False, False, True], [False, True, False], True])
@pytest.mark.parametrize("m,n", [(1, 1), (37, 300)])
def test_results_do_not_change(skip_middle, launches, m, n, device):
    x = randn(m, n, device=device)
    bound = centered_scaled_rows.bind((x, skip_middle))
    config = bound.config_spec.normalize({"block_sizes": [16, 8, 16, 64], "dependent_launches": launches})
    with poisoned_allocations():  # every output element unwritten shows as NaN
        out = bound.compile_config(config)(x.clone(), skip_middle)
    compare(out, reference(as_float64(x), skip_middle), label=str(dict(config)))


def test_the_first_kernel_and_all_false_are_normalized_away():
    spec = centered_scaled_rows.bind((torch.randn(5, 30), False)).config_spec
    assert list(spec.normalize({"dependent_launches": True})["dependent_launches"]) == [False, True, True]
    assert list(spec.normalize({"dependent_launches": [True, False, True]})["dependent_launches"]) == [False, False, True]
    for off in (False, [True, False, False], [False] * 3):
        assert "dependent_launches" not in spec.normalize({"dependent_launches": off})
    assert [k.choices for k in spec.knobs() if k.name == "dependent_launches"] == [(False,), (False, True), (False, True)]
    assert spec.knobs()[-3:] == [k for k in spec.knobs() if k.name == "dependent_launches"]


@pytest.mark.parametrize("value", [[True, True], [False, True, 1], "yes"])
def test_invalid_values_raise(value):
    spec = centered_scaled_rows.bind((torch.randn(5, 30), False)).config_spec
    with pytest.raises(exc.InvalidConfig, match="dependent_launches"):
        spec.normalize({"dependent_launches": value})


def test_generated_kernels_let_and_wait_under_the_device_flag():
    bound = centered_scaled_rows.bind((torch.randn(5, 30), False))
    source = bound.to_triton_code({"dependent_launches": [False, False, True]})
    kernels = source.split("@_jit_on_first_launch")[1:]
    first, middle, last = kernels
    assert "gdc" not in first and "launch_pdl" not in first
    assert "tl.extra.cuda.gdc_launch_dependents()" in middle and "gdc_wait" not in middle
    assert "tl.extra.cuda.gdc_wait()" in last and "gdc_launch_dependents" not in last
    assert "hk_compile_options = {'launch_pdl': True}" in last and "launch_pdl" not in middle
    body = last.split("):\n", 1)[1].splitlines()
    assert body[:2] == ["    if DEPENDENT_LAUNCH:", "        tl.extra.cuda.gdc_wait()"]  # before any memory access
    assert source.count("_dependent_launch(") == 3  # the helper's definition and the two launches' flags
    assert "gdc" not in bound.to_triton_code({})


def sm90_griddepcontrol() -> dict:
    """Runs in a process without TRITON_INTERPRET: the griddepcontrol instructions of each kernel,
    cross-compiled for sm_90, with the last two loops' kernels dependent launches and without."""
    from build_tools.cross_compile import cross_compile

    args = (torch.randn(37, 300), False)
    bound = centered_scaled_rows.bind(args)
    out = {}
    for label, launches in (("on", [False, True, True]), ("off", False)):
        compiled = cross_compile(bound, args, {"block_sizes": [16, 8, 16, 64], "dependent_launches": launches})
        out[label] = [sorted({step for step in ("griddepcontrol.wait", "griddepcontrol.launch_dependents")
                              if step in c.asm["ptx"]}) for c in compiled]
    return out


@pytest.mark.skipif("nvidia" not in triton.backends.backends, reason="Triton's NVIDIA backend is not installed")
def test_sm90_kernels_compile_to_griddepcontrol():
    results = results_without_interpreter("tests.dsl.test_dependent_launches", timeout=600)
    assert results["on"] == [["griddepcontrol.launch_dependents"],
                             ["griddepcontrol.launch_dependents", "griddepcontrol.wait"],
                             ["griddepcontrol.wait"]]
    assert results["off"] == [[], [], []]


if __name__ == "__main__":
    print(json.dumps(sm90_griddepcontrol()))
