"""Writing results: stdout, or a file written atomically (temp file + rename), so an interrupted
run never leaves a half-written report behind."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import IO, Iterator, Optional


class OutputClosed(Exception):
    """The reader of stdout went away (`| head`): stop at once, quietly, exit 0.

    Not an OSError on purpose: click would turn an EPIPE OSError into exit status 1 ("findings")."""


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
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
