"""Resumable run state: which (op, dtype, shape) entries are finished, and which failed.

Saved atomically after every entry, so a run killed at any moment loses at most the entry in
progress; `--resume` skips finished entries and retries failed ones up to `max_attempts`. The
wall time spent so far is kept too, so resumed runs can share a fixed total between them.
"""
from __future__ import annotations

import json
from pathlib import Path

from build_tools.autotune.table import write_json_atomic


class TuneState:
    def __init__(self, path: Path, arch: str, data: dict | None = None):
        self.path = Path(path)
        self.arch = arch
        self.data = data or {"arch": arch, "finished": {}, "failed": {}}

    @classmethod
    def open(cls, path: Path, arch: str, resume: bool) -> "TuneState":
        """The saved state when resuming a run of the same arch, else a fresh one."""
        path = Path(path)
        if resume and path.exists():
            data = json.loads(path.read_text())
            if data.get("arch") == arch:
                return cls(path, arch, data)
        return cls(path, arch)

    @property
    def finished(self) -> dict:
        return self.data["finished"]

    def is_finished(self, key: str) -> bool:
        return key in self.finished

    def attempts(self, key: str) -> int:
        return self.data["failed"].get(key, {}).get("attempts", 0)

    def mark_finished(self, key: str, record: dict) -> None:
        self.finished[key] = record
        self.data["failed"].pop(key, None)
        self.save()

    def mark_failed(self, key: str, error: str) -> None:
        self.data["failed"][key] = {"attempts": self.attempts(key) + 1, "error": error}
        self.save()

    @property
    def spent_s(self) -> float:
        """Wall seconds spent on entries (finished or failed) over every run of this state."""
        return self.data.get("spent_s", 0.0)

    def add_spent(self, seconds: float) -> None:
        self.data["spent_s"] = round(self.spent_s + seconds, 3)
        self.save()

    def save(self) -> None:
        write_json_atomic(self.path, self.data)
