"""`python -m benchmarks.report --only`: which rows plan.select keeps, and what RESULTS.md says of it."""
import pytest

from benchmarks import plan
from benchmarks.render import markdown


def test_an_op_keeps_its_rows_and_shape_keys_narrow_them():
    rows = plan.build()
    every = plan.select(rows, ["rmsnorm_bwd"])
    assert every and all(r.op == "rmsnorm_bwd" for r in every)
    assert len(every) == sum(r.op == "rmsnorm_bwd" for r in rows)
    one = plan.select(rows, ["rmsnorm_bwd:M=1,N=4096"])
    assert [(r.op, r.shape) for r in one] == [("rmsnorm_bwd", {"M": 1, "N": 4096})]
    causal = plan.select(rows, ["attention_bwd:causal=true,Sq=16384"])
    assert causal and all(r.shape["causal"] and r.shape["Sq"] == 16384 for r in causal)


def test_the_selection_keeps_plan_order_and_other_kinds():
    rows = plan.build()
    chosen = plan.select(rows, ["first_call", "rmsnorm_bwd:M=1", "dispatch"])
    assert [r.kind for r in chosen] == [r.kind for r in rows if r in chosen]
    assert {r.kind for r in chosen} == {"case", "dispatch", "first_call"}
    assert [rows.index(r) for r in chosen] == sorted(rows.index(r) for r in chosen)


@pytest.mark.parametrize("item", ["rmsnorm_bwdd", "rmsnorm_bwd:M=3", "rmsnorm_bwd:M", "matmul:M=x"])
def test_a_name_that_matches_nothing_is_an_error(item):
    with pytest.raises(ValueError, match="--only"):
        plan.select(plan.build(), [item])


def test_results_say_which_rows_ran():
    meta = {"device": "cpu", "torch": "t", "triton": "t", "helion_kernels": "h", "commit": "c", "liger_kernel": "l",
            "python": "p", "date": "d", "dtype": "bfloat16", "budget_s": 1.0, "tiny": True}
    data = {"meta": meta, "ceilings": {}, "records": [], "bars": [], "finished": True}
    assert "only the rows" not in markdown(data)
    text = markdown({**data, "meta": {**meta, "only": ["rmsnorm_bwd:M=1,N=4096"]}})
    assert "only the rows rmsnorm_bwd:M=1,N=4096" in text.splitlines()[2]
