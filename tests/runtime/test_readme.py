"""The README's usage example runs as written."""
import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(capsys):
    text = README.read_text()
    section = text[text.index("## Using the library"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "softmax" in printed and str(torch.Size([2, 7, 64])) in printed
