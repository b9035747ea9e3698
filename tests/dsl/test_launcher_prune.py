"""Launchers lose the launches over provably empty grids, have the values that fold written in,
and lose the pure statements nothing reads any more; anything not provably empty, impure or still
read stays."""
import ast

from build_tools.dsl.launcher_prune import prune_launcher


def pruned(source: str) -> list:
    return [ast.unparse(statement) for statement in prune_launcher(ast.parse(source).body)]


SPLIT_OFF = """
m, n = x.size()
split = False
rows = m if split else 0
main = n if split else 1
out = torch.empty_like(x)
parts = x.new_empty((rows, _cdiv(n, 4)), dtype=torch.float32)
parts_strides = parts.stride()
_launch(k1, (_cdiv(rows, 1) * _cdiv(n, 4),), (rows, n, x, parts, parts_strides[0]), (1,), 4, 2)
_launch(k2, (_cdiv(m, 1), _cdiv(main, 1)), (m, main, x, out), (1,), 4, 2)
return out
"""


def test_a_pass_switched_off_by_its_config_is_dropped_with_its_buffer():
    assert pruned(SPLIT_OFF) == [
        "m, n = x.size()",
        "out = torch.empty_like(x)",
        "_launch(k2, (m, 1), (m, 1, x, out), (1,), 4, 2)",
        "return out",
    ]


def test_a_pass_switched_on_keeps_every_launch_with_its_constants_folded():
    source = SPLIT_OFF.replace("split = False", "split = True")
    assert pruned(source) == [
        "m, n = x.size()",
        "rows = m",
        "main = n",
        "out = torch.empty_like(x)",
        "parts = x.new_empty((rows, _cdiv(n, 4)), dtype=torch.float32)",
        "parts_strides = parts.stride()",
        "_launch(k1, (rows * _cdiv(n, 4),), (rows, n, x, parts, parts_strides[0]), (1,), 4, 2)",
        "_launch(k2, (m, main), (m, main, x, out), (1,), 4, 2)",
        "return out",
    ]


def test_identities_are_simplified_on_integers_only():
    source = """
m, n = x.size()
rows = 0
scale = 1
y = x + 0
z = x * scale
_launch(k, (_cdiv(m - rows, 1) * scale, _cdiv(n + rows, 4)), (m * scale, y, z, _cdiv(w, 1)), (), 4, 2)
"""
    assert pruned(source) == [
        "m, n = x.size()",
        "y = x + 0",  # x may be a tensor: x + 0 is a copy, not x
        "z = x * 1",
        "_launch(k, (m, _cdiv(n, 4)), (m, y, z, _cdiv(w, 1)), (), 4, 2)",
    ]


def test_a_buffer_still_read_stays():
    source = SPLIT_OFF.replace("return out", "return (out, parts)")
    assert "parts = x.new_empty((0, _cdiv(n, 4)), dtype=torch.float32)" in pruned(source)
    assert not [line for line in pruned(source) if line.startswith("_launch(k1")]


def test_names_assigned_twice_or_unknown_sizes_are_not_folded():
    twice = SPLIT_OFF.replace("out = torch.empty_like(x)", "out = torch.empty_like(x)\nfor i in range(2):\n    rows = m")
    assert any(line.startswith("_launch(k1") for line in pruned(twice))
    runtime = SPLIT_OFF.replace("rows = m if split else 0", "rows = m - n")
    assert any(line.startswith("_launch(k1") for line in pruned(runtime))


def test_impure_statements_stay():
    source = """
rows = 0
buf = make_buffer(x)
_launch(k, (rows,), (x, record(x)), (), 4, 2)
_launch(k, (1,), (x,), (), 4, 2)
"""
    assert pruned(source) == ["buf = make_buffer(x)", "_launch(k, (0,), (x, record(x)), (), 4, 2)",
                              "_launch(k, (1,), (x,), (), 4, 2)"]


def test_a_host_reduction_of_a_dropped_buffer_goes_with_it():
    source = SPLIT_OFF.replace("_launch(k2", "part_sum = parts.sum(1).to(torch.float32)\n_launch(k2")
    assert pruned(source) == pruned(SPLIT_OFF)


def test_mutating_tensor_methods_stay():
    source = SPLIT_OFF.replace("_launch(k2", "zeroed = parts.zero_()\n_launch(k2")
    kept = pruned(source)
    assert "zeroed = parts.zero_()" in kept
    assert "parts = x.new_empty((0, _cdiv(n, 4)), dtype=torch.float32)" in kept


def test_and_or_and_comparisons_fold_when_their_deciding_operands_do():
    guarded = SPLIT_OFF.replace("rows = m if split else 0", "rows = m if split and _cdiv(n, 4) <= 64 else 0")
    assert not [line for line in pruned(guarded) if line.startswith("_launch(k1")]
    switched_on = guarded.replace("split = False", "split = True")
    assert any(line.startswith("_launch(k1") for line in pruned(switched_on))  # n is unknown
    either = SPLIT_OFF.replace("rows = m if split else 0", "rows = 0 if split or 3 > 2 else m")
    assert not [line for line in pruned(either) if line.startswith("_launch(k1")]
    unknown_first = SPLIT_OFF.replace("rows = m if split else 0", "rows = m if n > 2 or split else 0")
    assert any(line.startswith("_launch(k1") for line in pruned(unknown_first))


def test_constants_that_cannot_decide_an_and_or_an_or_are_dropped():
    source = "flag = True\nquiet = False\nreturn (a and flag and b, quiet or a, a and flag, flag and 2 > 1 and b)"
    assert pruned(source)[-1] == "return (a and b, a, a and True, b)"



ENUM_CHOICE = """
m, n = x.size()
finish = 'pass'
parts = x.new_empty((m, n), dtype=torch.float32)
out = torch.empty_like(w)
columns = n if finish == 'pass' else 0
_launch(k1, (m,), (m, n, x, parts), (1,), 4, 2)
_launch(k2, (_cdiv(columns, 32),), (columns, m, parts, out), (1,), 4, 2)
return (x, parts.sum(0).to(w.dtype) if finish == 'host' else out)
"""


def test_a_string_choice_folds_its_comparisons_and_branches():
    assert pruned(ENUM_CHOICE) == [
        "m, n = x.size()",
        "parts = x.new_empty((m, n), dtype=torch.float32)",
        "out = torch.empty_like(w)",
        "columns = n",
        "_launch(k1, (m,), (m, n, x, parts), (1,), 4, 2)",
        "_launch(k2, (_cdiv(columns, 32),), (columns, m, parts, out), (1,), 4, 2)",
        "return (x, out)",
    ]
    host = pruned(ENUM_CHOICE.replace("finish = 'pass'", "finish = 'host'"))
    assert host[-1] == "return (x, parts.sum(0).to(w.dtype))"
    assert not [line for line in host if line.startswith("_launch(k2") or line.startswith("out =")]


def test_strings_fold_only_in_comparisons_with_strings():
    """A string ordered against an integer or added to one is left alone (Python would raise)."""
    for test in ("finish < 3", "finish + 1 == 2"):
        lines = pruned(ENUM_CHOICE.replace("finish == 'pass'", test))
        assert any(line.startswith("columns = n if") for line in lines)
        assert any(line.startswith("_launch(k2") for line in lines)


XYZ_AND_PERSISTENT = """
m, n = x.size()
rows = 0
parts = x.new_empty((rows, n), dtype=torch.float32)
_grid = _xyz_grid((rows, _cdiv(n, 4)))
parts_strides = parts.stride()
_launch(k1, _grid, (rows, n, x, parts, parts_strides[0]), (len(_grid) == 1,), 4, 2)
out = torch.empty_like(x)
_grid = _xyz_grid((_cdiv(m, 4), _cdiv(n, 4)))
_launch(k2, _grid, (m, n, x, out), (len(_grid) == 1,), 4, 2)
_device = x.device
_launch(k3, (min(_num_sms(_device), rows * _cdiv(n, 4)),), (rows, n, out), (), 4, 2)
return out
"""


def test_xyz_and_persistent_grids_over_no_programs_are_dropped():
    """pid_type "xyz" launches over a grid name assigned from `_xyz_grid(dims)`; a persistent loop
    over min(SM count, programs). The later `_grid` assignment stays for the launch that reads it,
    the earlier one goes with its launch."""
    assert pruned(XYZ_AND_PERSISTENT) == [
        "m, n = x.size()",
        "out = torch.empty_like(x)",
        "_grid = _xyz_grid((_cdiv(m, 4), _cdiv(n, 4)))",
        "_launch(k2, _grid, (m, n, x, out), (len(_grid) == 1,), 4, 2)",
        "return out",
    ]


def test_xyz_and_persistent_grids_with_programs_stay():
    kept = pruned(XYZ_AND_PERSISTENT.replace("rows = 0", "rows = m"))
    assert [line.split(",")[0] for line in kept if line.startswith("_launch")] == ["_launch(k1", "_launch(k2", "_launch(k3"]
    assert kept.count("_grid = _xyz_grid((rows, _cdiv(n, 4)))") == 1


def test_a_grid_name_reassigned_inside_a_block_is_not_resolved():
    source = XYZ_AND_PERSISTENT.replace("parts_strides = parts.stride()",
                                        "if n > 4:\n    _grid = (m,)\nparts_strides = parts.stride()")
    assert any(line.startswith("_launch(k1") for line in pruned(source))


SPLIT_K = """
m, k = a.size()
n = b.size(1)
split_k = 2
split_m = m if split_k > 1 else 0
partial = a.new_empty(split_k, split_m, n, dtype=torch.float32)
a_strides = a.stride()
_launch(k1, (_cdiv(m - split_m, 16) * _cdiv(n, 64),), (m - split_m, n, k, a, a_strides[0]), (16,), 4, 3)
_launch(k2, (_cdiv(split_m, 16) * _cdiv(n, 64) * split_k,), (split_m, n, k, a, partial), (16,), 4, 3)
return partial
"""


def test_a_pass_over_rows_that_cancel_is_dropped():
    """split-K over every row leaves the unsplit pass `m - split_m` = 0 rows, whatever m is."""
    kept = pruned(SPLIT_K)
    assert not any(line.startswith("_launch(k1") for line in kept)
    assert any(line.startswith("_launch(k2") for line in kept)
    cancelling = SPLIT_K.replace("_cdiv(m - split_m, 16)", "_cdiv(2 * split_m - m - (m - 0), 16)")
    assert not any(line.startswith("_launch(k1") for line in pruned(cancelling))


def test_rows_that_do_not_provably_cancel_keep_their_pass():
    variants = [
        SPLIT_K.replace("split_k = 2", "split_k = int(flag)"),  # the split is not known
        SPLIT_K.replace("_cdiv(m - split_m, 16)", "_cdiv(m - split_m + 1, 16)"),
        SPLIT_K.replace("_cdiv(m - split_m, 16)", "_cdiv(m * n - n * m, 16)"),  # products of names
        SPLIT_K.replace("_cdiv(m - split_m, 16)", "_cdiv(m - split_m, 0)"),
        SPLIT_K.replace("a_strides = a.stride()", "a_strides = a.stride()\nsplit_m = split_m - 1"),
        SPLIT_K.replace("m, k = a.size()", "m, k = a.size()\nm = m + 1"),
        SPLIT_K.replace("split_m = m if split_k > 1 else 0", "split_m = total.sum()").replace(
            "m - split_m", "split_m - split_m"),  # not an integer
    ]
    for source in variants:
        assert any(line.startswith("_launch(k1") for line in pruned(source)), source
