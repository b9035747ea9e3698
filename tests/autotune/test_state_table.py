"""Run state (resumption bookkeeping) and tuned-table merging."""
import json

from build_tools.autotune.state import TuneState
from build_tools.autotune.table import entry_key, load_table, merged_table, write_table


def entry(op, n, us):
    return {"op": op, "dtype": "bfloat16", "shape": {"N": n}, "config": {"num_warps": 4}, "us": us}


def test_state_survives_a_restart_only_when_resuming(tmp_path):
    path = tmp_path / "state.json"
    state = TuneState.open(path, "sm_90", resume=False)
    state.mark_finished(entry_key("a", "bfloat16", {"N": 1}), {"us": 1.0})
    state.mark_failed(entry_key("a", "bfloat16", {"N": 2}), "boom")
    resumed = TuneState.open(path, "sm_90", resume=True)
    assert resumed.is_finished(entry_key("a", "bfloat16", {"N": 1}))
    assert resumed.attempts(entry_key("a", "bfloat16", {"N": 2})) == 1
    assert not TuneState.open(path, "sm_90", resume=False).finished
    assert not TuneState.open(path, "sm_100", resume=True).finished


def test_finishing_clears_an_earlier_failure(tmp_path):
    state = TuneState.open(tmp_path / "s.json", "sm_90", resume=False)
    key = entry_key("a", "float16", {"M": 3, "N": 4})
    state.mark_failed(key, "boom")
    state.mark_failed(key, "boom")
    assert state.attempts(key) == 2
    state.mark_finished(key, {})
    assert state.attempts(key) == 0


def test_entry_key_ignores_shape_key_order():
    assert entry_key("a", "bf16", {"M": 1, "N": 2}) == entry_key("a", "bf16", {"N": 2, "M": 1})


def test_merge_replaces_matching_entries_and_keeps_the_rest_sorted(tmp_path):
    existing = {"schema": 1, "entries": [entry("b", 8, 5.0), entry("a", 8, 3.0)]}
    header = {"schema": 1, "arch": "sm_90"}
    table = merged_table(header, existing, [entry("a", 8, 2.0), entry("a", 4, 1.0)])
    assert [(e["op"], e["shape"]["N"], e["us"]) for e in table["entries"]] == [
        ("a", 4, 1.0), ("a", 8, 2.0), ("b", 8, 5.0)
    ]
    path = tmp_path / "t" / "sm_90.json"
    write_table(path, table)
    assert load_table(path) == json.loads(path.read_text()) == table
    header_lines = len(table) - 1
    assert len(path.read_text().splitlines()) == header_lines + 4 + len(table["entries"])
    assert load_table(tmp_path / "missing.json") is None


def test_table_path_prefers_this_device_and_never_takes_another_devices_table(tmp_path):
    from build_tools.autotune.table import table_path_for

    assert table_path_for(tmp_path, "sm_90", "NVIDIA H100 80GB HBM3") == tmp_path / "sm_90.json"
    write_table(tmp_path / "sm_90.json", {"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3",
                                          "entries": []})
    assert table_path_for(tmp_path, "sm_90", "NVIDIA H100 80GB HBM3") == tmp_path / "sm_90.json"
    h200 = table_path_for(tmp_path, "sm_90", "NVIDIA H200")
    assert h200 == tmp_path / "sm_90-nvidia-h200.json"
    write_table(h200, {"schema": 1, "arch": "sm_90", "device_name": "NVIDIA H200", "entries": []})
    assert table_path_for(tmp_path, "sm_90", "NVIDIA H200") == h200
    assert table_path_for(tmp_path, "sm_100", "NVIDIA B200") == tmp_path / "sm_100.json"


def test_a_records_dynamic_config_reaches_its_table_entry():
    """The tuner's record of a static winner carries the config its entry runs at other reduction
    sizes into the table; other records write no such field."""
    from build_tools.autotune.run import table_entry

    record = {"op": "softmax_fwd", "dtype": "bfloat16", "shape": {"M": 1, "N": 32000}, "specialization": {},
              "config": {"static_reduction_sizes": True}, "variant": "v", "us": 7.5, "baseline_us": {},
              "tuning": {}, "dynamic_config": {"static_reduction_sizes": False, "num_warps": 16}}
    assert table_entry(record)["dynamic_config"] == {"static_reduction_sizes": False, "num_warps": 16}
    del record["dynamic_config"]
    assert "dynamic_config" not in table_entry({**record, "config": {"static_reduction_sizes": False}})
