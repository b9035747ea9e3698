"""Build-stage CLI: `python -m build_tools generate|default-table|tune|retune ...`."""
from __future__ import annotations

import os
import sys

USAGE = """usage: python -m build_tools COMMAND [ARGS]

commands:
  generate       compile tuned_configs/*.json into helion_kernels/_generated/ (--check: verify only)
  default-table  write tuned_configs/default.json, the heuristic configs for untuned architectures
  tune, retune   autotune on this machine's GPU (see build_tools/autotune)
"""


def main(argv: list) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "generate":
        from build_tools.generate import main as run
        return run(rest)
    if command == "default-table":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # its kernel checks run on CPU; set before triton loads
        from build_tools.default_table import main as run
        return run(rest)
    if command in ("tune", "retune"):
        from build_tools.autotune.cli import main as run
        return run(argv)
    print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
