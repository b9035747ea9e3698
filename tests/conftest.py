"""Test setup: CPU runs go through Triton's interpreter unless a GPU test session asks otherwise."""
import os

if os.environ.get("HK_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

DEVICE = os.environ.get("HK_TEST_DEVICE", "cpu")


@pytest.fixture
def device():
    return DEVICE


def pytest_collection_modifyitems(config, items):
    if DEVICE == "cpu":
        return
    for item in items:
        item.add_marker(pytest.mark.gpu)


def pytest_runtest_logreport(report):
    """With HK_FAILURE_LOG set, append each failure as it happens (long runs on the GPU machine may
    be cut off before pytest's summary)."""
    path = os.environ.get("HK_FAILURE_LOG")
    if path and report.failed:
        with open(path, "a") as fh:
            fh.write(f"=== {report.nodeid} ({report.when})\n{str(report.longrepr)[-3000:]}\n")
