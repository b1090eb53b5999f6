"""Live mode (`diagnose --follow`): read a log while the job writes it, and say what is wrong as
soon as it can be decided.

`FollowStream` is the file object the ordinary reader reads from: a growing file (it keeps
reading at the end, reopens the path when the file was rotated, starts over when it was
truncated) or a pipe. It ends at the end of a pipe, when the watched process exits (`pid`), or when
`stop` is set (Ctrl-C). Before it waits for more input, and at least every FLUSH_S while input
keeps coming, it calls `idle()`: by then every event of what it returned before has gone through
streams and engine (the pipeline is a chain of generators that asks for more input only when it is
done with the last), so `idle` may flush the engine's held steps and look for new findings.

Reads are kept below the reader's small-region size, so every line takes the per-line path and
nothing waits in a batch for more input; memory stays what a normal run holds.
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Callable, Optional

from nanscope.ingest.reader import SMALL_REGION

POLL_S = 0.05  # how often a quiet file is looked at again
FLUSH_S = 0.2  # the longest time events wait for idle() while input keeps coming


class FollowStream:
    """A binary file object over a growing file (path) or a pipe (fd)."""

    def __init__(self, path: Optional[str] = None, fd: Optional[int] = None, pid: Optional[int] = None,
                 stop: Optional[threading.Event] = None, idle: Optional[Callable[[], None]] = None,
                 poll_s: float = POLL_S):
        if (path is None) == (fd is None):
            raise ValueError("FollowStream needs a path or an fd")
        self.path = path
        self.fd = fd
        self.pid = pid
        self.stop = stop or threading.Event()
        self.idle = idle
        self.poll_s = poll_s
        self._last_idle = time.monotonic()
        self._pos = 0
        self._ino: Optional[tuple] = None
        self.rotations = 0
        self.truncations = 0
        if path is not None:
            self._open(wait=False)

    # --- the file ---------------------------------------------------------------------------------
    def _open(self, wait: bool) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)  # type: ignore[arg-type]
        except FileNotFoundError:
            if not wait:
                raise
            return False
        if self.fd is not None:
            os.close(self.fd)
        self.fd = fd
        st = os.fstat(fd)
        self._ino = (st.st_dev, st.st_ino)
        self._pos = 0
        return True

    def _rotated(self) -> bool:
        """The path now names another file (logrotate's create, a job restarted with the same -o)."""
        try:
            st = os.stat(self.path)  # type: ignore[arg-type]
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self._ino

    def _file_read(self, n: int) -> bytes:
        while True:
            data = os.read(self.fd, n)  # type: ignore[arg-type]
            if data:
                self._pos += len(data)
                return data
            size = os.fstat(self.fd).st_size  # type: ignore[arg-type]
            if size < self._pos:  # truncated in place (copytruncate, `> log`): read it from the start
                os.lseek(self.fd, 0, os.SEEK_SET)  # type: ignore[arg-type]
                self._pos = 0
                self.truncations += 1
                continue
            if self._rotated():  # the old file is read to its end: go on with the new one
                if self._open(wait=True):
                    self.rotations += 1
                    continue
            if self._ended():
                return b""
            self._wait()

    # --- a pipe -------------------------------------------------------------------------------------
    def _pipe_read(self, n: int) -> bytes:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0 if self.stop.is_set() else self.poll_s)
            if ready:
                try:
                    return os.read(self.fd, n)  # type: ignore[arg-type]  # b"": the writer closed it
                except BlockingIOError:
                    continue
            if self._ended():
                return b""
            self._call_idle()

    # --- both ---------------------------------------------------------------------------------------
    def _ended(self) -> bool:
        if self.stop.is_set():
            return True
        if self.pid is not None and not _alive(self.pid):
            self.stop.set()  # whatever it wrote before it exited has been read by now
            return True
        return False

    def _wait(self) -> None:
        self._call_idle()
        self.stop.wait(self.poll_s)

    def _call_idle(self) -> None:
        self._last_idle = time.monotonic()
        if self.idle is not None:
            self.idle()

    def read(self, n: int = -1) -> bytes:
        n = SMALL_REGION - 1 if n is None or n < 0 else min(n, SMALL_REGION - 1)
        if self.idle is not None and time.monotonic() - self._last_idle >= FLUSH_S:
            self._call_idle()  # input keeps coming: let what came before be decided now
        if self.stop.is_set() and self.pid is None and self.path is None:
            return b""
        if self.path is not None:
            if self.stop.is_set():  # Ctrl-C or the job's exit: what is there still counts
                data = os.read(self.fd, n)  # type: ignore[arg-type]
                self._pos += len(data)
                return data
            return self._file_read(n)
        return self._pipe_read(n)

    def close(self) -> None:
        if self.path is not None and self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of ours that exited is a zombie until reaped: it is gone all the same
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True
