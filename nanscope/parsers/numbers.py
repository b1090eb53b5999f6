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
        return _SPECIAL.get(s.lower())


def to_int(s: Optional[str]) -> Optional[int]:
    if s is None:
        return None
    try:
        return int(s.strip().replace(",", ""))
    except ValueError:
        f = to_float(s)
        if f is None or not math.isfinite(f) or f != int(f):
            return None
        return int(f)


def is_nonfinite(x: Optional[float]) -> bool:
    return x is not None and not math.isfinite(x)
