"""numpy, imported on first use.

A log with no step lines (a crash, an OOM, a launcher's error: most logs pasted into a CI job or an
issue) never needs an array, and numpy's import is the largest single part of a small log's
start-up (~80-120 ms of ~0.5 s). Modules that use numpy take `np` from here; the first attribute
read imports numpy, and each attribute read is then cached on the proxy, so later reads cost what
a module attribute costs."""

from __future__ import annotations

from typing import Any


class _LazyNumpy:
    def __getattr__(self, name: str) -> Any:
        import numpy

        value = getattr(numpy, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return "<numpy, imported on first use>"


np: Any = _LazyNumpy()
