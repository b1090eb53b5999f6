"""All parsers, in the order they are tried. Adding a format = adding a module to PARSER_MODULES."""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Optional, Sequence

from nanscope.errors import NanscopeError
from nanscope.parsers.base import Parser

PARSER_MODULES = (
    "nanscope.parsers.torchrun",
    "nanscope.parsers.deepspeed",
    "nanscope.parsers.hf",
    "nanscope.parsers.python",
    "nanscope.parsers.pytorch",
)


@lru_cache(maxsize=1)
def all_parsers() -> tuple[Parser, ...]:
    parsers = [importlib.import_module(m).PARSER for m in PARSER_MODULES]
    return tuple(sorted(parsers, key=lambda p: p.priority))


def select(names: Optional[Sequence[str]] = None) -> tuple[Parser, ...]:
    parsers = all_parsers()
    if not names:
        return parsers
    known = {p.name: p for p in parsers}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise NanscopeError(f"unknown parser {', '.join(unknown)}; known: {', '.join(known)}")
    return tuple(p for p in parsers if p.name in names)


def keyword_regex(parsers: Sequence[Parser], extra: Sequence[str] = ()) -> "re.Pattern[bytes]":
    """One native prefilter over raw bytes: the union of every rule's keywords."""
    words = sorted({k for p in parsers for k in p.keywords} | set(extra), key=len, reverse=True)
    return re.compile(b"|".join(re.escape(w.encode()) for w in words))
