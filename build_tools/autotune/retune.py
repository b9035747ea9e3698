"""Nightly retune: tune again with the shipped configs as incumbents and accept only real wins.

The shipped config of an entry is what runs on this device today: the entry of the device's table,
else that of another table of its architecture (`shipped_entries`). Each entry's new winner and
the shipped config are re-benchmarked side by side (interleaved, in one benchmark process). A
change is accepted when the new config is faster by more than the measured noise (and at least
`min_gain`), or when the shipped config no longer passes; the new config always passed the
accuracy gate. Accepted changes go into the device's table only, the generated code is
regenerated, and a markdown report lists every decision.
"""
from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from build_tools.autotune.plan import Entry
from build_tools.autotune.run import RunSummary, table_entry
from build_tools.autotune.table import key_of, load_table, merged_table, sibling_entries, write_table
from helion_kernels._variant import canonical_json

EXIT_UNCHANGED = 0
EXIT_FAILED = 1
EXIT_CHANGED = 3
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Decision:
    op: str
    dtype: str
    shape: dict
    old_us: float | None
    new_us: float
    threshold: float
    accepted: bool
    reason: str

    @property
    def speedup(self) -> float | None:
        if self.old_us is None or not math.isfinite(self.old_us) or self.new_us <= 0:
            return None
        return self.old_us / self.new_us


def decide(record: dict, shipped: dict | None, min_gain: float) -> Decision:
    """Whether a re-tuned record should replace the shipped entry (see the module docstring)."""
    new_us = record["us"]
    tuning = record["tuning"]

    def decision(old_us, threshold, accepted, reason):
        return Decision(record["op"], record["dtype"], record["shape"], old_us, new_us, threshold, accepted, reason)

    if shipped is None:
        return decision(None, 0.0, True, "new entry")
    incumbent = tuning.get("incumbent")
    if incumbent is None:
        return decision(shipped.get("us"), 0.0, False, "shipped config was not re-measured")
    old_us = incumbent["us"]
    if canonical_json(shipped["config"]) == canonical_json(record["config"]):
        return decision(old_us, 0.0, False, "same config")
    if incumbent["error"] is not None or old_us is None:
        return decision(None, 0.0, True, f"shipped config fails now: {str(incumbent['error'])[:80]}")
    threshold = max(incumbent["noise"], tuning["noise"], min_gain)
    gain = (old_us - new_us) / old_us
    if gain > threshold:
        return decision(old_us, threshold, True, f"{gain:.1%} faster (noise {threshold:.1%})")
    return decision(old_us, threshold, False, f"gain {gain:.1%} within noise {threshold:.1%}")


def apply_decisions(header: dict, shipped: dict | None, records: dict, decisions: dict) -> dict:
    """The shipped table with accepted records swapped in (everything else untouched)."""
    shipped_by_key = {key_of(e): e for e in (shipped or {}).get("entries", [])}
    accepted = [
        _keeping_unmeasured_baselines(table_entry(records[key]), shipped_by_key.get(key))
        for key, d in decisions.items()
        if d.accepted
    ]
    return merged_table(header, shipped, accepted)


def _keeping_unmeasured_baselines(entry: dict, shipped_entry: dict | None) -> dict:
    """The entry with the shipped entry's time of each peer this run did not measure (a run
    without baselines, not a peer that failed: those carry a note and stay unmeasured)."""
    old = (shipped_entry or {}).get("baseline_us") or {}
    notes = entry.get("baseline_notes") or {}
    kept = {peer: old.get(peer) if us is None and peer not in notes else us
            for peer, us in entry["baseline_us"].items()}
    return {**entry, "baseline_us": kept}


def _fmt(us) -> str:
    return "-" if us is None or not math.isfinite(us) else f"{us:.2f}"


def report_markdown(arch: str, device_name: str, decisions: dict, summary: RunSummary) -> str:
    accepted = sum(d.accepted for d in decisions.values())
    lines = [
        f"# Retune report: {arch} ({device_name})",
        "",
        f"{len(decisions)} entries re-tuned, {accepted} changed, {len(summary.failed)} failed"
        f"{', stopped for budget' if summary.stopped_for_budget else ''}.",
        "",
        "| op | dtype | shape | old us | new us | speedup | decision |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in sorted(decisions.values(), key=lambda d: (d.op, d.dtype, canonical_json(d.shape))):
        speedup = f"{d.speedup:.3f}x" if d.speedup else "-"
        verdict = ("**accepted**: " if d.accepted else "kept: ") + d.reason
        lines.append(
            f"| {d.op} | {d.dtype} | `{canonical_json(d.shape)}` | {_fmt(d.old_us)} | {_fmt(d.new_us)} "
            f"| {speedup} | {verdict} |"
        )
    if summary.failed:
        lines += ["", "## Failed entries", ""]
        lines += [f"- `{key}`: {error[:200]}" for key, error in sorted(summary.failed.items())]
    return "\n".join(lines) + "\n"


def shipped_entries(path: Path, arch: str, device_name: str) -> dict:
    """key -> entry that ships on this device: the table at `path` (the device's) layered over the
    other tables of `arch` beside it."""
    own = load_table(path) or {}
    return {**sibling_entries(path, arch, device_name), **{key_of(e): e for e in own.get("entries", [])}}


def hidden_entries(path: Path, arch: str, device_name: str) -> list:
    """The entries of the other tables of `arch` beside `path` at shapes the device's own table
    holds (which it hides there): a retune's searches start from their configs too."""
    own = {key_of(e) for e in (load_table(path) or {}).get("entries", [])}
    return [e for key, e in sibling_entries(path, arch, device_name).items() if key in own]


def regenerate() -> bool:
    """`python -m build_tools generate` in the repository; True when it succeeded."""
    return subprocess.run([sys.executable, "-m", "build_tools", "generate"], cwd=REPO_ROOT).returncode == 0


def finish_retune(
    arch: str,
    device_name: str,
    header: dict,
    shipped_path: Path,
    entries: list[Entry],
    summary: RunSummary,
    report_path: Path,
    min_gain: float,
    regenerate_fn=regenerate,
) -> int:
    """Decide against what ships on this device, write the device's table (only) and the report,
    regenerate; returns the process exit status."""
    shipped = shipped_entries(shipped_path, arch, device_name)
    planned = {e.key for e in entries}
    decisions = {
        key: decide(record, shipped.get(key), min_gain)
        for key, record in summary.records.items()
        if key in planned
    }
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(report_markdown(arch, device_name, decisions, summary))
    if not any(d.accepted for d in decisions.values()):
        return EXIT_UNCHANGED
    write_table(shipped_path, apply_decisions(header, load_table(shipped_path), summary.records, decisions))
    if not regenerate_fn():
        return EXIT_FAILED
    return EXIT_CHANGED
