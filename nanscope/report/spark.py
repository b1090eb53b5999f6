"""Sparklines for the text report: one row per rank, loss (and the loss scale where logged) over
the steps of the whole job, so a NaN at step 40 sits in the same column on every rank.

A column is a bucket of steps (nanscope.series merges its min / max buckets to the width); its
glyph is the level of the bucket's middle value, `×` (ASCII `x`) where a value was non-finite and
`s` where an update was skipped: marks always win over levels, and are never dropped. Plain ASCII
when the terminal cannot show block characters.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from nanscope.lazynp import np

BLOCKS = "▁▂▃▄▅▆▇█"
ASCII = "_.-:=+*#"
LOSS_W = 40
SCALE_W = 20
MAX_ROWS = 16


def sparkline(b: Any, name: str, unicode: bool = True) -> str:
    """The glyphs of one value over buckets `b` (series.Buckets, one per column)."""
    levels = BLOCKS if unicode else ASCII
    nan, skip = ("×", "s") if unicode else ("x", "s")
    mins, maxs = b.mins.get(name), b.maxs.get(name)
    n = len(b.lo)
    if mins is None:
        mins = maxs = np.full(n, np.nan)
    mid = (mins + maxs) / 2
    fin = mid[np.isfinite(mid)]
    log = len(fin) > 0 and fin.min() > 0 and fin.max() / fin.min() >= 50
    vals = np.log10(np.where(np.isfinite(mid) & (mid > 0), mid, np.nan)) if log else mid
    lo, hi = (float(np.nanmin(vals)), float(np.nanmax(vals))) if np.isfinite(vals).any() else (0.0, 1.0)
    span = hi - lo
    vals = _carry(vals)
    bad = b.nonfinite.get(name)
    out = []
    for i in range(n):
        if bad is not None and bad[i] >= 0:
            out.append(nan)
        elif b.skipped[i] >= 0:
            out.append(skip)
        elif not math.isfinite(vals[i]):
            out.append(" ")
        else:
            k = int((vals[i] - lo) / span * (len(levels) - 1) + 0.5) if span > 0 else len(levels) // 2
            out.append(levels[k])
    return "".join(out)


def _carry(vals: np.ndarray) -> np.ndarray:
    """Columns no row fell in (a log that prints every 50th step) take the level before them
    (the first ones, the first level): a sparkline is a line, not a comb."""
    ok = np.isfinite(vals)
    if ok.all() or not ok.any():
        return vals
    idx = np.where(ok, np.arange(len(vals)), 0)
    np.maximum.accumulate(idx, out=idx)
    first = int(np.argmax(ok))
    idx[:first] = first
    return vals[idx]


def _range(b: Any, name: str) -> str:
    mins, maxs = b.mins.get(name), b.maxs.get(name)
    if mins is None or not np.isfinite(mins).any():
        return ""
    lo, hi = float(np.nanmin(mins)), float(np.nanmax(maxs))
    return f"{lo:.4g}..{hi:.4g}"


def spark_rows(series: Sequence[Any], unicode: bool = True, names: Optional[dict] = None) -> list[tuple[str, bool]]:
    """(line, is a heading) for the text report; nothing when no rank logged a loss. `names`: the
    per-rank table's short names (`file N`) for labels too long for its column."""
    with_loss = [s for s in series if s.first_step is not None and ("loss" in s.mins or "loss" in s.nonfinite)]
    if not with_loss:
        return []
    lo = min(s.first_step for s in with_loss)
    hi = max(s.last_step for s in with_loss)
    nan = "×" if unicode else "x"
    scale = any("loss_scale" in s.mins and np.nanmax(s.maxs["loss_scale"]) > np.nanmin(s.mins["loss_scale"])
                for s in with_loss)
    head = f"loss{' | loss scale' if scale else ''} by step {lo}..{hi} ({nan} non-finite, s skipped)"
    width = max(len(_label(s, names)) for s in with_loss[:MAX_ROWS])
    rows: list[tuple[str, bool]] = [(head, True)]
    for s in with_loss[:MAX_ROWS]:
        w = min(LOSS_W, hi - lo + 1)
        b = s.buckets(lo, hi, w)
        b = _fill(b, lo, hi, w)
        line = f"{_label(s, names):<{width}}  {sparkline(b, 'loss', unicode)}  {_range(b, 'loss')}"
        if "loss_scale" in s.mins and np.nanmax(s.maxs["loss_scale"]) > np.nanmin(s.mins["loss_scale"]):
            sw = min(SCALE_W, hi - lo + 1)
            bs = _fill(s.buckets(lo, hi, sw), lo, hi, sw)
            line += f"  | {sparkline(bs, 'loss_scale', unicode)}  {_range(bs, 'loss_scale')}"
        rows.append((line, False))
    if len(with_loss) > MAX_ROWS:
        rows.append((f"... {len(with_loss) - MAX_ROWS} more rank(s)", False))
    return rows


def _label(s: Any, names: Optional[dict] = None) -> str:
    """A rank's label as the per-rank table shows it (never a truncated path): its `file N` name
    there, else the rank, else the file's name."""
    from nanscope.report.sanitize import terminal

    short = terminal(s.label if s.rank is not None else s.label.replace("\\", "/").rsplit("/", 1)[-1], 2000)
    full = terminal(s.label, 2000)
    if len(short) > 24 and names and full in names:
        return names[full]
    return short


def _fill(b: Any, lo: int, hi: int, n: int) -> Any:
    """Buckets -> exactly n columns (empty columns where no row fell), so ranks line up."""
    from nanscope.series import Buckets

    span = max(1, hi - lo + 1)
    col = b.cols
    full = lambda src, fill, dt=np.float64: _put(np.full(n, fill, dtype=dt), col, src)  # noqa: E731
    return Buckets(lo=lo + (np.arange(n) * span) // n, hi=lo + ((np.arange(n) + 1) * span) // n - 1,
                   count=full(b.count, 0, np.int64), mins={k: full(v, np.nan) for k, v in b.mins.items()},
                   maxs={k: full(v, np.nan) for k, v in b.maxs.items()},
                   nonfinite={k: full(v, -1, np.int64) for k, v in b.nonfinite.items()},
                   skipped=full(b.skipped, -1, np.int64), cols=np.arange(n))


def _put(arr: np.ndarray, idx: np.ndarray, src: np.ndarray) -> np.ndarray:
    arr[idx] = src
    return arr
