"""One failure printed many times (a device assert per GPU thread, an NCCL error echoed by the
watchdog, the exception and its re-raise) is one event: remember what a stream reported lately."""

from __future__ import annotations

REPEAT_WINDOW = 300  # lines: the same failure again closer than this is the same failure
MAX_REMEMBERED = 256  # distinct failures remembered per stream (bounded memory)


def first_time(state: dict, key: tuple, line: int) -> bool:
    """True unless the same failure (key) was already reported on this stream a few lines ago."""
    seen = state.setdefault("seen", {})
    last = seen.get(key)
    if len(seen) > MAX_REMEMBERED:
        seen.clear()
    seen[key] = line
    return last is None or line - last > REPEAT_WINDOW
