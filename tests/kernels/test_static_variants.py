"""The shipped variants that pass reduction extents as constexprs (config `static_reduction_sizes`)
and the dynamic twins their table entries run at other widths (`helion_kernels._variant.twin_config`).
Triton compiles a static variant once per extent, and the launchers keep each compiled kernel keyed
by its constexprs; a launch that reused the kernel of another width would read and write the wrong
columns. Every such variant of the tuned tables, and every twin, runs through its generated
launcher at several widths in a row (the last one again after another), with poisoned output
allocations, against the op's float64 reference, and so do their twins compiled for other argument
dtypes (OpSpec.dtype_variants). The op's `reduction_keys` must name exactly the
shape keys that change a static variant's constexprs, since the dispatcher trusts them to keep the
static kernel to its tuned widths."""
import pytest
import torch

import kernels_src
from helion_kernels._dispatch import DISPATCHER
from kernel_check import assert_close, assert_dtypes_of_baseline, poisoned_allocations, shipped_entries, shipped_inputs, variants_of

ROWS = {"cpu": 3, "cuda": 37}
WIDTHS = {"cpu": (300, 77, 1, 300), "cuda": (32000, 4097, 1, 32000)}


def static_entries() -> list:
    """Every table entry whose config compiles its reduction sizes in (each has a dynamic twin)."""
    return [e for e in shipped_entries() if e.twin]


def static_variants() -> list:
    return sorted({(e.op, e.dtype, e.variant) for e in static_entries()})


def test_the_tables_ship_static_variants():
    assert {op for op, _, _ in static_variants()} >= {"softmax_fwd", "softmax_bwd"}


@pytest.mark.parametrize("op, dtype, variant, dtypes", variants_of(static_entries(), twins=True))
def test_static_variant_and_twin_are_right_at_every_width(device, op, dtype, variant, dtypes):
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    launcher = DISPATCHER.registry.launchers(op)[variant]
    for seed, width in enumerate(WIDTHS[device]):
        args, tolerance = shipped_inputs(spec, {"M": ROWS[device], "N": width}, dtype, dtypes, device, seed)
        with poisoned_allocations():
            outputs = launcher(*args)
        assert_dtypes_of_baseline(spec, args, outputs, f"{op} {variant}")
        assert_close(outputs, spec.reference(*args), tolerance, f"{op} {variant} width {width}")


def launch_constexprs(monkeypatch, launcher, args) -> list:
    """The constexpr values of every kernel launch the generated launcher makes for `args`."""
    seen = []
    # a module's first launch may build the native launch and rebind `_launch` to it: made outside
    # the patch, which would otherwise restore the Python launch over it for the rest of the process
    launcher(*args)
    launch = launcher.__globals__["_launch"]

    def recording(kernel, grid, kernel_args, constexprs, *rest):
        seen.append((kernel.fn.__name__, tuple(constexprs)))  # the first launch passes its lazy kernel
        return launch(kernel, grid, kernel_args, constexprs, *rest)

    with monkeypatch.context() as patch:
        patch.setitem(launcher.__globals__, "_launch", recording)
        launcher(*args)
    return seen


@pytest.mark.parametrize("op, dtype, variant", static_variants())
def test_reduction_keys_are_the_sizes_a_static_variant_compiles_in(monkeypatch, device, op, dtype, variant):
    """Changing a shape key outside `reduction_keys` leaves a static variant's constexprs (so its
    compiled kernels) unchanged; changing one of them changes them. The twin's stay unchanged under
    a change of width within one power of two."""
    spec = next(s for s in kernels_src.ALL_OPS if s.name == op)
    info = DISPATCHER.registry.op_info(op)
    torch_dtype = getattr(torch, dtype)
    base = {"M": 3, "N": 300}
    assert set(base) == set(info["shape_keys"]) and set(spec.reduction_keys) <= set(base)

    def constexprs(vid, shape):
        launcher = DISPATCHER.registry.launchers(op)[vid]
        return launch_constexprs(monkeypatch, launcher, spec.make_inputs(shape, torch_dtype, device, 0))

    static = constexprs(variant, base)
    for key in base:
        changed = constexprs(variant, {**base, key: base[key] + 2})
        assert (changed != static) == (key in spec.reduction_keys), (op, variant, key, static, changed)
    for twin in {e.twin for e in static_entries() if e.op == op and e.variant == variant}:
        assert constexprs(twin, {**base, "N": 302}) == constexprs(twin, base)
