"""Tolerant number reading: nan, -nan, inf, Infinity, 1.2E+00, '0.5', tensor(0.5, device=...)."""

from __future__ import annotations

import math
from typing import Optional

_SPECIAL = {
    "nan": math.nan,
    "-nan": math.nan,
    "+nan": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-infinity": -math.inf,
}


def to_float(s: Optional[str]) -> Optional[float]:
    if s is None:
        return None
    s = s.strip().strip("'\"")
    if s.startswith("tensor("):
        s = s[7:].split(",", 1)[0].rstrip(")").strip()
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        s = s.lower()
        # Lightning's padded `nan.0` / `inf.0` / `-inf.`, or a sentence's full stop after the value
        return _SPECIAL.get(s[:-2] if s.endswith(".0") else s[:-1] if s.endswith(".") else s)


INT64_MAX = 2**63 - 1


def to_int(s: Optional[str]) -> Optional[int]:
    """An integer, or None when it is not one or does not fit in 64 bits (no step, epoch or
    counter is that large: such a number is noise, and it would not fit in a column)."""
    if s is None:
        return None
    try:
        v = int(s.strip().replace(",", ""))
    except ValueError:
        f = to_float(s)
        if f is None or not math.isfinite(f) or f != int(f):
            return None
        v = int(f)
    return v if -INT64_MAX <= v <= INT64_MAX else None


def is_nonfinite(x: Optional[float]) -> bool:
    return x is not None and not math.isfinite(x)
