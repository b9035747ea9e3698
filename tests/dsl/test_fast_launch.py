"""Generated launchers launch through `_launch` (constexprs in signature order, strides and sizes
read once per tensor), call plain cdiv/next_power_of_2 and give allocations their sizes as separate
ints, `new_empty` through the helpers' `_new_empty`; the helpers travel with the module."""
import ast

import pytest

from build_tools.dsl import exc
from build_tools.dsl.fast_launch import LAUNCH_HELPERS, rewrite_launches


def test_launch_is_rewritten_with_constexprs_in_signature_order():
    lines = ["n = x.size(0)",
             "k[(triton.cdiv(n, 4),)](x, x.stride(0), x.stride(1), n, y, y.stride(0), "
             "C=triton.next_power_of_2(n), B=4, num_warps=8, num_stages=2)"]
    assert rewrite_launches(lines, {"k": ["B", "C"]}) == [
        "n = x.size(0)",
        "x_strides = x.stride()",
        "_launch(k, (_cdiv(n, 4),), (x, x_strides[0], x_strides[1], n, y, y.stride(0)), "
        "(4, _next_power_of_2(n)), 8, 2)",
    ]


def test_hoisted_names_do_not_shadow_launcher_variables():
    lines = ["x_strides = y.numel()", "k[(1,)](x, x.stride(0), x.stride(1), x_strides, num_warps=4, num_stages=1)"]
    assert rewrite_launches(lines, {"k": []})[1:] == [
        "_x_strides = x.stride()", "_launch(k, (1,), (x, _x_strides[0], _x_strides[1], x_strides), (), 4, 1)"]


def test_allocations_take_their_sizes_as_separate_ints_through_the_helpers():
    lines = ["out = x.new_empty((m, n), dtype=torch.float32)", "lse = torch.empty([b, h, s], dtype=d, device=q.device)",
             "row = x.new_zeros((m,))", "same = torch.empty_like(x)", "scalar = x.new_empty(())",
             "spread = torch.empty(*shape)", "sized = torch.ones(shape, dtype=d)", "pair = x.new_empty(m, n)",
             "k[(1,)](out, lse, row, same, scalar, spread, sized, pair, num_warps=4, num_stages=1)"]
    assert rewrite_launches(lines, {"k": []}) == [
        "out = _new_empty(x, torch.float32, m, n)", "lse = torch.empty(b, h, s, dtype=d, device=q.device)",
        "row = x.new_zeros(m)", "same = torch.empty_like(x)", "scalar = _new_empty(x, x.dtype, ())",
        "spread = torch.empty(*shape)", "sized = torch.ones(shape, dtype=d)", "pair = _new_empty(x, x.dtype, m, n)",
        "_launch(k, (1,), (out, lse, row, same, scalar, spread, sized, pair), (), 4, 1)"]


def test_other_allocation_forms_stay_torch_calls():
    lines = ["a = torch.empty_like(x)", "b = f(x).new_empty(m)", "c = x.new_empty(m, device=e)",
             "d = x.new_empty(*shape, dtype=t)", "e = x.new_empty(dtype=t)", "g = x.new_empty(m, dtype=t, device=e)",
             "k[(1,)](a, b, c, d, e, g, num_warps=4, num_stages=1)"]
    assert rewrite_launches(lines, {"k": []})[:-1] == lines[:-1]


def test_a_launch_whose_keywords_differ_from_the_constexprs_is_an_internal_error():
    with pytest.raises(exc.NotSupported, match="internal"):
        rewrite_launches(["k[(1,)](x, B=4, num_warps=4, num_stages=1)"], {"k": ["B", "C"]})


def test_helpers_are_self_contained_source():
    tree = ast.parse(LAUNCH_HELPERS)
    assert not [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assigned = {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets}
    assert {"_launch_python", "_cdiv", "_next_power_of_2"} <= defined
    assert {"_launch", "_new_empty", "_NATIVE_LAUNCH_SOURCE"} <= assigned


class _Unlaunchable:
    """A kernel stand-in that records every launch attempt."""

    def __init__(self):
        self.launched = []
        self.pre_run_hooks = []

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.launched.append(grid)
        return run


@pytest.mark.parametrize("grid", [(0,), (3, 0), (0, 5, 1)])
def test_an_empty_grid_returns_before_triton(grid):
    namespace = {"torch": __import__("torch"), "triton": __import__("triton")}
    exec(LAUNCH_HELPERS, namespace)
    kernel = _Unlaunchable()
    namespace["_launch"](kernel, grid, (1,), (), 4, 2)
    namespace["_launch"](kernel, (2, 1), (1,), (), 4, 2)
    assert kernel.launched == [(2, 1)]
