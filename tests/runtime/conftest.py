"""Fixtures of the runtime tests."""
import pytest
import torch


@pytest.fixture
def poison(monkeypatch):
    """Make torch.empty/empty_like/new_empty return NaN-filled (or extreme-valued) tensors."""
    real_empty, real_empty_like, real_new_empty = torch.empty, torch.empty_like, torch.Tensor.new_empty

    def fill(t):
        with torch.no_grad():
            if t.is_floating_point():
                t.fill_(float("nan"))
            elif t.dtype != torch.bool:
                t.fill_(-12345)
        return t

    monkeypatch.setattr(torch, "empty", lambda *a, **k: fill(real_empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: fill(real_empty_like(*a, **k)))
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, *a, **k: fill(real_new_empty(self, *a, **k)))
