"""`python -m helion_kernels info`: device, architecture key, tables found and their coverage."""
from __future__ import annotations

import torch

from ._backend import INTERPRET
from ._dispatch import DISPATCHER
from ._tables import DEFAULT_ARCH, table_dirs


def _current_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def info_lines() -> list:
    """The report, one line per item."""
    device = _current_device()
    arch, name = DISPATCHER.device_arch(device)
    tables = DISPATCHER.tables
    lines = [f"torch {torch.__version__}", f"device: {device} ({name or 'no GPU name'})",
             f"arch key: {arch}"]
    if device.type == "cpu":
        mode = "generated Triton through the interpreter" if INTERPRET else "PyTorch implementations"
        lines.append(f"CPU tensors run: {mode} (TRITON_INTERPRET={'1' if INTERPRET else 'unset'})")
    lines.append("table folders: " + (", ".join(str(p) for p in table_dirs()) or "none found"))
    own = [t for t in tables if t.arch == arch]
    if own:
        lines.append(f"tables for {arch}: " + ", ".join(f"{t.name} ({t.device_name})" for t in own))
    else:
        lines.append(f"no tuned table for {arch}: the default table's heuristic configs are used")
    registry = DISPATCHER.registry
    for table in tables:
        lines.append(f"table {table.name} (arch {table.arch}):")
        for (op, dtype), entries in sorted(table.entries.items()):
            launchers = registry.launchers(op)
            missing = sum(e.variant not in launchers for e in entries)
            state = f", {missing} without generated variant" if missing else ""
            lines.append(f"  {op:<16} {dtype:<9} {len(entries):>3} shapes{state}")
    lines.append("generated ops: " + (", ".join(registry.ops()) or "none"))
    if not any(t.arch == DEFAULT_ARCH for t in tables):
        lines.append("warning: no default table (tuned_configs/default.json) was found")
    return lines


def main(argv=None) -> int:
    print("\n".join(info_lines()))
    return 0
