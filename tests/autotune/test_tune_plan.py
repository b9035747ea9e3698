"""Planning entries and picking neighbour seeds."""
import math
from dataclasses import dataclass

import pytest

from build_tools.autotune.plan import Entry, neighbour_configs, plan_entries, shape_distance, smoke_entries


@dataclass(frozen=True)
class Op:
    name: str
    shapes: list
    dtypes: tuple = ("bfloat16", "float32")
    exact_keys: tuple = ()


def record(op, dtype, shape, warps):
    return {"op": op, "dtype": dtype, "shape": shape, "config": {"num_warps": warps}}


def test_plan_covers_every_op_dtype_shape_and_filters():
    ops = [Op("a", [{"N": 1}, {"N": 2}]), Op("b", [{"N": 3}])]
    assert len(plan_entries(ops)) == 6
    assert {e.op_name for e in plan_entries(ops, {"b"})} == {"b"}
    with pytest.raises(ValueError):
        plan_entries(ops, {"nope"})


def test_plan_keeps_entries_matching_a_label_text_and_skips_given_keys():
    ops = [Op("a", [{"M": 64, "N": 1}, {"M": 128, "N": 1}]), Op("b", [{"M": 64, "N": 3}])]
    matched = plan_entries(ops, match=["a bfloat16 [M=64,", "b float32"])
    assert [e.label() for e in matched] == ["a bfloat16 [M=64,N=1]", "b float32 [M=64,N=3]"]
    skipped = plan_entries(ops, {"a"}, skip_keys={matched[0].key})
    assert [e.label() for e in skipped] == ["a bfloat16 [M=128,N=1]", "a float32 [M=64,N=1]", "a float32 [M=128,N=1]"]


def test_shape_distance_is_log_scale_and_respects_exact_and_flag_keys():
    assert shape_distance({"M": 1024, "N": 64}, {"M": 4096, "N": 64}) == 2.0
    assert shape_distance({"D": 64}, {"D": 128}, exact_keys=("D",)) == math.inf
    assert shape_distance({"N": 8, "causal": True}, {"N": 8, "causal": False}) == math.inf
    assert shape_distance({"N": 8}, {"M": 8}) == math.inf


def test_neighbours_are_nearest_first_same_dtype_preferred_and_distinct():
    op = Op("a", [], exact_keys=("D",))
    entry = Entry(op, "bfloat16", {"M": 4096, "D": 64})
    finished = {
        "1": record("a", "bfloat16", {"M": 65536, "D": 64}, 1),
        "2": record("a", "bfloat16", {"M": 2048, "D": 64}, 2),
        "3": record("a", "float32", {"M": 4096, "D": 64}, 4),
        "4": record("a", "bfloat16", {"M": 4096, "D": 128}, 8),
        "5": record("b", "bfloat16", {"M": 4096, "D": 64}, 16),
        "6": record("a", "bfloat16", {"M": 1024, "D": 64}, 2),
    }
    assert neighbour_configs(entry, finished, limit=3) == [
        {"num_warps": 2}, {"num_warps": 4}, {"num_warps": 1}
    ]


def test_smoke_entries_are_one_tiny_entry_per_op():
    ops = [
        Op("a", [{"M": 4096, "N": 4096}, {"M": 1, "N": 8192}]),
        Op("b", [{"B": 4, "H": 32, "S": 512, "D": 128, "causal": True}], ("bfloat16", "float16"), ("D",)),
    ]
    entries = smoke_entries(ops, cap=64)
    assert [(e.op_name, e.dtype_name, e.shape) for e in entries] == [
        ("a", "float32", {"M": 1, "N": 64}),
        ("b", "float16", {"B": 2, "H": 2, "S": 64, "D": 128, "causal": True}),
    ]
    assert [e.op_name for e in smoke_entries(ops, {"b"})] == ["b"]
