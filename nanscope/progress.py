"""A progress bar on stderr for inputs that take more than a moment: bytes read / total, lines/s.

Only when stderr is a terminal (never in CI logs or with --quiet); it appears after the first
second, so small inputs never flash a bar, and it is erased when reading ends.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Optional, Sequence

from nanscope.ingest.reader import Source

DELAY_S = 1.0


class ByteProgress:
    def __init__(self, total: Optional[int], stream=None):
        self.total = total
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.bytes = 0
        self.lines = 0
        self._bar = None
        self._task = None
        self._last = 0.0

    def __call__(self, nbytes: int, nlines: int) -> None:
        self.bytes += nbytes
        self.lines += nlines
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        if self._bar is None:
            if now - self.start < DELAY_S:
                return
            self._open()
        rate = self.lines / max(now - self.start, 1e-6)
        self._bar.update(self._task, completed=self.bytes, lps=f"{rate:,.0f} lines/s")  # type: ignore[union-attr]

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        console = Console(file=self.stream, stderr=True)
        self._bar = Progress(
            TextColumn("nanscope reading"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
            TextColumn("{task.fields[lps]}"), TimeRemainingColumn(), console=console, transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("read", total=self.total, lps="")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def progress_for(sources: Sequence[Source], quiet: bool = False, stream=None) -> Optional[ByteProgress]:
    """A ByteProgress when stderr is an interactive terminal, else None. The total counts plain
    files only (a .gz / stdin input grows the count without a known end)."""
    stream = stream or sys.stderr
    if quiet or not (hasattr(stream, "isatty") and stream.isatty()) or os.environ.get("TERM") == "dumb":
        return None
    total = 0
    for s in sources:
        if s.path is None:
            return ByteProgress(None, stream)
        try:
            with open(s.path, "rb") as f:
                if f.read(2) in (b"\x1f\x8b", b"\x28\xb5"):
                    return ByteProgress(None, stream)
            total += os.path.getsize(s.path)
        except OSError:
            pass
    return ByteProgress(total, stream)
