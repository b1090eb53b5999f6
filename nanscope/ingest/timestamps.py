"""Leading timestamps, so errors on different ranks can be put in order.

The value is seconds within a year (month and day included, the year ignored when the log does
not print one): comparable between lines of one job, which is all attribution needs.
"""

from __future__ import annotations

import re
from typing import Optional

# One pattern for both readers: `re` here, line by line, and RE2 in the native lane over a column
# of printable-ASCII lines (ingest/native.py), so the two cannot drift apart. Alternatives: glog /
# c10 (`W1129 21:24:13.795`), ISO-ish (`2024-05-01 12:00:01,123`), vLLM (`INFO 05-19 10:13:11`).
TS_PATTERN = (r"[ \t]*\[?(?:(?P<glog>[EWIFD])(?P<gm>\d\d)(?P<gd>\d\d) (?P<gh>\d\d):(?P<gi>\d\d):(?P<gs>\d\d(?:\.\d+)?)"
              r"|(?:(?P<y>\d{4})-)?(?P<m>\d\d)-(?P<d>\d\d)[ T_](?P<h>\d\d):(?P<i>\d\d):(?P<s>\d\d(?:[.,]\d+)?)"
              r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) +(?P<vm>\d\d)-(?P<vd>\d\d) (?P<vh>\d\d):(?P<vi>\d\d):(?P<vs>\d\d(?:\.\d+)?))")
_TS = re.compile("^" + TS_PATTERN)
DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]


def _secs(month: str, day: str, h: str, mi: str, s: str) -> Optional[float]:
    try:
        mo = int(month)
        if not 1 <= mo <= 12:
            return None
        return ((DAYS_BEFORE[mo - 1] + int(day) - 1) * 24 + int(h)) * 3600 + int(mi) * 60 + float(s.replace(",", "."))
    except ValueError:  # (\d is wider than what int() takes in no known case; never crash on a log)
        return None


def parse_ts(text: str) -> Optional[float]:
    m = _TS.match(text)
    if m is None:
        return None
    g = m.groups()  # glog gm gd gh gi gs | y m d h i s | vm vd vh vi vs
    k = 1 if g[0] else 7 if g[7] else 12
    return _secs(g[k], g[k + 1], g[k + 2], g[k + 3], g[k + 4])
