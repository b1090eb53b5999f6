"""The stream key of an event: one stream per (node, global rank), else per (node, local rank),
else per input. Streams, the native lane and the per-line lane must agree on it, so it lives
below all three."""

from __future__ import annotations

from nanscope.model import Origin


def stream_key(origin: Origin, source: str) -> tuple:
    if origin.rank is not None:
        return ("rank", origin.node, origin.rank)
    if origin.local_rank is not None:
        return ("local", origin.node, origin.local_rank)
    return ("source", source)
