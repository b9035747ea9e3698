"""Accuracy gate: outputs against a float64 reference within (rtol, atol)."""
import torch

from build_tools.autotune.accuracy import mismatch


def test_close_outputs_pass_and_far_outputs_fail():
    expected = torch.linspace(-2, 2, 64, dtype=torch.float64)
    assert mismatch(expected.to(torch.bfloat16), expected, rtol=1e-2, atol=1e-2) is None
    wrong = expected.clone()
    wrong[7] += 0.5
    message = mismatch(wrong.float(), expected, rtol=1e-2, atol=1e-2)
    assert message is not None and "1/64" in message


def test_nan_where_reference_is_finite_fails():
    expected = torch.ones(8, dtype=torch.float64)
    actual = torch.ones(8)
    actual[3] = float("nan")
    assert mismatch(actual, expected, 1e-3, 1e-3) is not None


def test_matching_nan_and_inf_pass():
    expected = torch.tensor([float("nan"), float("inf"), 1.0], dtype=torch.float64)
    assert mismatch(expected.float(), expected, 1e-3, 1e-3) is None
    flipped = torch.tensor([float("nan"), float("-inf"), 1.0])
    assert mismatch(flipped, expected, 1e-3, 1e-3) is not None


def test_shape_and_arity_are_checked():
    expected = (torch.zeros(4, 4, dtype=torch.float64), torch.zeros(4, dtype=torch.float64))
    assert "shape" in mismatch((torch.zeros(4, 5), torch.zeros(4)), expected, 0, 0)
    assert "outputs" in mismatch(torch.zeros(4, 4), expected, 0, 0)
    assert mismatch((torch.zeros(4, 4), torch.zeros(4)), expected, 0, 0) is None


def test_none_outputs_must_line_up():
    expected = (torch.zeros(2, dtype=torch.float64), None)
    assert mismatch((torch.zeros(2), None), expected, 0, 0) is None
    assert mismatch((torch.zeros(2), torch.zeros(2)), expected, 0, 0) is not None


def test_chunked_comparison_counts_every_chunk(monkeypatch):
    import build_tools.autotune.accuracy as accuracy

    monkeypatch.setattr(accuracy, "CHUNK", 7)
    expected = torch.zeros(50, dtype=torch.float64)
    actual = torch.zeros(50)
    actual[[3, 20, 49]] = 1.0
    actual[30] = 5.0
    message = mismatch(actual, expected, 0.0, 0.1)
    assert "4/50" in message and "max abs error 5" in message
