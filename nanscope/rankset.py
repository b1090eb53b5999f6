"""Rank sets as people write them: [0,1,2,3,5] -> '0-3,5' (reports, summaries, evidence)."""

from __future__ import annotations

from typing import Any, Iterable


def fmt_ranks(ranks: Iterable[Any]) -> str:
    """[0,1,2,3,5] -> '0-3,5'."""
    rs = sorted(r for r in ranks if r is not None)
    if not rs:
        return "?"
    out, start, prev = [], rs[0], rs[0]
    for r in rs[1:] + [None]:
        if r is not None and r == prev + 1:
            prev = r
            continue
        out.append(str(start) if start == prev else (f"{start},{prev}" if prev == start + 1 else f"{start}-{prev}"))
        if r is not None:
            start = prev = r
    return ",".join(out)


def rank_phrase(ranks: Iterable[Any]) -> str:
    """[3] -> 'rank 3', [0,1,2,3] -> 'ranks 0-3': the ranks as a noun phrase that agrees in number."""
    rs = sorted({r for r in ranks if r is not None})
    return f"rank {rs[0]}" if len(rs) == 1 else f"ranks {fmt_ranks(rs)}"
