"""The reader one step ahead, on a thread of its own: reading, splitting, the keyword pass and the
native lanes' RE2 passes of the next regions run while this thread parses, feeds streams and the
engine for the last ones.

Arrow's kernels release the GIL, so on a machine with a core to spare the reader's native work
overlaps the Python work downstream (columns.sliced already splits each pass over the cores; the
Python between the passes could not use them). The items come out exactly as scan_candidates
yields them, in order; what the reader counts goes to an InputInfo of its own (`Ahead.info`),
added to the input's once the read is over (the pipeline counts candidates too, and `+=` from two
threads could lose a count). A read in pieces (sync points, where both sides' counts are taken)
and a growing input (where a line must come out as soon as it is read) are not read ahead.

The reader runs at most DEPTH batches of items ahead (a batch: up to BATCH items, or fewer up to
a natively read region's payload), so what is held for the consumer stays about one region."""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterator, Optional

from nanscope.model import InputInfo

DEPTH = 2
BATCH = 256
_END = object()


class _Failed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


class Ahead:
    """`make(info)` builds the reader's generator with the InputInfo it should count into;
    iterating an Ahead runs that generator on a thread and yields its items here."""

    def __init__(self, make: Any, info: InputInfo, big: tuple = ()):
        self.target = info
        self.info = InputInfo(info.path, info.size)
        self._items = make(self.info)
        self._big = big  # item payload classes that end a batch (a region's rows)
        self._q: "queue.Queue[Any]" = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _put(self, x: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(x, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        buf: list = []
        try:
            big = self._big
            for it in self._items:
                buf.append(it)
                if len(buf) >= BATCH or it[2].__class__ in big:
                    if not self._put(buf):
                        return
                    buf = []
            if buf and not self._put(buf):
                return
            self._put(_END)
        except BaseException as e:  # (handed to the consumer after what was read before it, raised there)
            if not buf or self._put(buf):
                self._put(_Failed(e))

    def __iter__(self) -> Iterator:
        self._thread = threading.Thread(target=self._run, name="nanscope-read-ahead", daemon=True)
        self._thread.start()
        try:
            while True:
                got = self._q.get()
                if got is _END:
                    break
                if got.__class__ is _Failed:
                    raise got.error
                yield from got
        finally:
            self._stop.set()
            while self._thread.is_alive():
                try:
                    self._q.get(timeout=0.05)  # (unblock a put; the reader sees the stop and ends)
                except queue.Empty:
                    pass
                self._thread.join(timeout=0.05)
            self._merge()

    def _merge(self) -> None:
        """The reader's counts into the input's (also after an early stop: what it read was read)."""
        t, s = self.target, self.info
        t.lines = s.lines
        t.candidate_lines += s.candidate_lines
        t.replaced_bytes += s.replaced_bytes
        t.long_lines += s.long_lines
        t.nul_bytes += s.nul_bytes
        if not s.complete:
            t.complete = False
            t.error = t.error or s.error
