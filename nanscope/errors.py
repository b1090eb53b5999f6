"""Errors with a location, and the exit-code contract."""

from __future__ import annotations

from enum import IntEnum
from typing import Optional


class ExitCode(IntEnum):
    CLEAN = 0  # ran; nothing at or above --fail-on
    FINDINGS = 1  # ran; findings at or above --fail-on
    ERROR = 2  # usage, config, unreadable input or internal error
    RETRYABLE = 3  # findings at or above --fail-on, all of them retryable infrastructure faults
    INTERRUPTED = 130  # SIGINT
    TERMINATED = 143  # SIGTERM (128 + 15), after removing any temporary file


class NanscopeError(Exception):
    """An error the user can act on: bad input, bad signature file, bad option."""

    def __init__(self, message: str, path: Optional[str] = None, line: Optional[int] = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


class InputError(NanscopeError):
    pass


class SignatureError(NanscopeError):
    pass
