"""Read ahead: the reader's work on the next chunk overlaps the parsing of this one.

Most of the reader's time (splitting lines, the keyword prefilter, the native lane's RE2
passes) is spent inside Arrow, which releases the GIL; most of the rest of a diagnosis
(per-line parsers, streams, signature machines) is Python. A producer thread runs the reader
(scan_candidates) a few chunks ahead and hands its items over in blocks, so on a machine with
two cores the two halves run at the same time in one process. The order of items, and so the
report, is exactly the same as without it.

The producer counts into an InputInfo of its own; its counts are added to the caller's when
the input ends, so no counter is ever written by two threads.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Callable, Iterator

from nanscope.model import InputInfo

MIN_BYTES = 8 << 20  # smaller inputs are read in the caller's thread (a thread would cost more)
DEPTH = 2  # blocks waiting in the queue: bounds the memory held ahead
_BLOCK_ITEMS = 2048
_DONE = object()

ENABLED = True  # tests switch it off to compare


def worth_it(size: "int | None") -> bool:
    """Read ahead for files big enough, when a second core exists. Not for standard input:
    a thread blocked reading a pipe that sends nothing holds the stream's lock, and the
    interpreter cannot exit cleanly on Ctrl-C."""
    return ENABLED and (os.cpu_count() or 1) > 1 and size is not None and size >= MIN_BYTES


def read_ahead(make: Callable[[InputInfo], Iterator], info: InputInfo) -> Iterator:
    """The items of make(private_info), produced in a thread. The producer's counters are
    merged into `info` when the items end (or the consumer stops early)."""
    mine = InputInfo(path=info.path, size=info.size)
    q: "queue.Queue" = queue.Queue(maxsize=DEPTH)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        block: list = []
        try:
            for item in make(mine):
                block.append(item)
                if len(block) >= _BLOCK_ITEMS or item[1] == b"":  # a region's native payload: hand it over now
                    if not put(block):
                        return
                    block = []
            if block and not put(block):
                return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - re-raised in the consumer
            put(e)

    thread = threading.Thread(target=produce, name="nanscope-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            got = q.get()
            if got is _DONE:
                break
            if isinstance(got, BaseException):
                raise got
            yield from got
    finally:
        stop.set()
        thread.join()  # it stops after the chunk at hand (files only: see worth_it)
        _merge(info, mine)


def _merge(info: InputInfo, mine: InputInfo) -> None:
    info.lines += mine.lines
    info.candidate_lines += mine.candidate_lines
    info.long_lines += mine.long_lines
    info.nul_bytes += mine.nul_bytes
    if not mine.complete:
        info.complete = False
        info.error = info.error or mine.error
