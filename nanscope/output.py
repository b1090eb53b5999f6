"""Writing results: stdout, or a file written atomically (temp file + rename), so an interrupted
run never leaves a half-written report behind.

A temporary file is created 0600; before the rename it is given the mode a plain `open()` would
have given it (0666 less the umask, or the mode of the file it replaces), so CI artifact uploaders
and teammates can read the report as they read any other file."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import IO, Iterator, Optional


class OutputClosed(Exception):
    """The reader of stdout went away (`| head`): stop at once, quietly, exit 0.

    Not an OSError on purpose: click would turn an EPIPE OSError into exit status 1 ("findings")."""


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def final_mode(path: str, directory: bool = False) -> int:
    """The mode `path` would get from open()/mkdir(): the replaced file's, else 0666/0777 less the umask."""
    try:
        st = os.stat(path)
    except OSError:
        return (0o777 if directory else 0o666) & ~current_umask()
    return st.st_mode & 0o7777


def settle_mode(tmp: str, path: str, directory: bool = False) -> None:
    """Give a temporary file (or folder) the mode of its final name before the rename."""
    os.chmod(tmp, final_mode(path, directory))


class StdoutWatch:
    """A progress callback that stops the run (OutputClosed) once the reader of a piped stdout has
    gone, so `nanscope diagnose --format jsonl big.log | head -1` does not read big.log to the
    end: its begin line went out first, and after head exits every chunk read asks poll() whether
    the pipe's read end is closed (POLLERR). Wraps the progress bar, if any."""

    def __init__(self, inner=None):
        import select

        self.inner = inner
        self._poll = select.poll()
        self._poll.register(sys.stdout.fileno(), 0)  # POLLERR / POLLHUP are always reported

    @staticmethod
    def usable() -> bool:
        import stat

        try:
            return hasattr(__import__("select"), "poll") and stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
        except (OSError, ValueError, AttributeError):
            return False

    def __call__(self, nbytes: int, nlines: int) -> None:
        if self.inner is not None:
            self.inner(nbytes, nlines)
        if self._poll.poll(0):
            raise OutputClosed()

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


@contextlib.contextmanager
def open_output(path: Optional[str], binary: bool = False) -> Iterator[IO]:
    if path is None or path == "-":
        try:
            yield sys.stdout.buffer if binary else sys.stdout
            (sys.stdout.buffer if binary else sys.stdout).flush()
        except BrokenPipeError:
            raise OutputClosed() from None
        return
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".nanscope-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": "\n"})) as f:
            yield f
        settle_mode(tmp, path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
