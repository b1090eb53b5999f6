"""All parsers, in the order they are tried (by priority). Adding a format = adding a module to
nanscope/parsers/ that defines PARSER; it is found automatically."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Optional, Sequence

from nanscope.errors import NanscopeError
from nanscope.ingest.reader import Prefilter
from nanscope.parsers.base import Parser

_NOT_PARSERS = {"base", "registry", "numbers"}


@lru_cache(maxsize=1)
def all_parsers() -> tuple[Parser, ...]:
    import nanscope.parsers as pkg

    parsers = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name in _NOT_PARSERS or info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        if isinstance(getattr(mod, "PARSER", None), Parser):
            parsers.append(mod.PARSER)
    names = [p.name for p in parsers]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise NanscopeError(f"two parsers are named {', '.join(sorted(dupes))}")
    return tuple(sorted(parsers, key=lambda p: (p.priority, p.name)))


def select(names: Optional[Sequence[str]] = None) -> tuple[Parser, ...]:
    parsers = all_parsers()
    if not names:
        return parsers
    got = _SELECTED.get(tuple(names))
    if got is not None and got[0] is parsers:
        return got[1]  # (a native row made into an event later selects again, once per row)
    known = {p.name: p for p in parsers}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise NanscopeError(f"unknown parser {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = tuple(p for p in parsers if p.name in names)
    _SELECTED[tuple(names)] = (parsers, chosen)
    return chosen


_SELECTED: dict = {}


def keyword_regex(parsers: Sequence[Parser], extra: Sequence[str] = ()) -> Prefilter:
    """One native prefilter over raw bytes: the union of every rule's keywords (a Prefilter; its
    `.search` / `.pattern` are the equivalent Python regex)."""
    return Prefilter([k for p in parsers for k in p.keywords] + list(extra))
