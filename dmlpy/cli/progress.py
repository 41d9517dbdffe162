"""Progress of a long command-line run, on standard error so that standard output keeps
only the report: a bar redrawn in place on a terminal, one plain line per step elsewhere
(a log or CI keeps every line; a bar's carriage returns would make one unreadable line)."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO


class Progress:
    """Steps of a run of known length: `step(label)` as each begins, `done()` at the end."""

    def __init__(self, tool: str, total: int, stream: TextIO | None = None):
        self.tool = tool
        self.total = max(1, total)
        self.count = 0
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty()

    def step(self, label: str) -> None:
        self.count = min(self.count + 1, self.total)
        counter = f"{self.count}/{self.total}"
        if not self.terminal:
            print(f"{self.tool}: {counter} {label}", file=self.stream, flush=True)
            return
        width = shutil.get_terminal_size().columns
        bar_width = 20
        filled = bar_width * (self.count - 1) // self.total  # the step just begun is not done yet
        line = f"{self.tool} [{'#' * filled}{'.' * (bar_width - filled)}] {counter} {label}"
        self.stream.write("\r\x1b[K" + line[:max(0, width - 1)])  # cut to the width: a wrapped line never clears
        self.stream.flush()

    def done(self) -> None:
        """Clear a terminal's bar, so the report starts on a clean line."""
        if self.terminal:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
