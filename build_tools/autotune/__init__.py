"""Offline autotuner: searches each op's config space on a GPU and freezes the winners.

Entry points: `build_tools.autotune.cli.main` (`python -m build_tools tune|retune`).
Layout: `space` (knob indices <-> configs), `search` (strategies), `timing`/`accuracy`/`bench`
(measuring one candidate), `workers` (compile pool and killable benchmark process),
`entry` (one (op, dtype, shape)), `run` (the whole library, resumable), `retune` (nightly).
"""
