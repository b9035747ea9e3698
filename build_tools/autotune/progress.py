"""Progress display and run log: a rich bar (entries done, current entry's best time) when on a
terminal, and log lines (to stderr and to the run's log file) always."""
from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

from helion_kernels._variant import canonical_json

LOGGER_NAME = "build_tools.autotune"


def setup_logging(log_path: Path | None, console=None) -> logging.Logger:
    """The tuner's logger: INFO to the console (rich when given) and DEBUG to `log_path`."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.DEBUG)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    if console is not None:
        from rich.logging import RichHandler

        stream = RichHandler(console=console, show_path=False, show_time=False)
    else:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    stream.setLevel(logging.INFO)
    logger.addHandler(stream)
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(log_path)
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        file_handler.setLevel(logging.DEBUG)
        logger.addHandler(file_handler)
    logger.propagate = False
    return logger


def _fmt_us(us: float) -> str:
    return f"{us:.1f}us" if math.isfinite(us) else "-"


class RunProgress:
    """Counts candidates of the current entry and finished entries; draws a bar if asked."""

    def __init__(self, total: int, show_bar: bool, log_path: Path | None):
        self.total = total
        self.bar = None
        console = None
        if show_bar:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[status]}"),
            )
            console = self.bar.console
            self.task = self.bar.add_task("tuning", total=total, status="")
            self.bar.start()
        self.log = setup_logging(log_path, console)
        self.label = ""
        self.tried = 0
        self.best = math.inf

    def start_entry(self, index: int, label: str) -> None:
        self.label, self.tried, self.best = label, 0, math.inf
        self.log.info("[%d/%d] %s", index, self.total, label)
        self._refresh()

    def candidate(self, config, outcome) -> None:
        self.tried += 1
        self.best = min(self.best, outcome.us)
        config_text = canonical_json(config)
        if outcome.error:
            self.log.debug("  candidate failed: %s | %s", outcome.error, config_text)
        else:
            self.log.debug("  candidate %s (best %s) | %s", _fmt_us(outcome.us), _fmt_us(self.best), config_text)
        self._refresh()

    def _refresh(self) -> None:
        if self.bar is not None:
            status = f"{self.label}  tried {self.tried}  best {_fmt_us(self.best)}"
            self.bar.update(self.task, status=status)

    def finish_entry(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
