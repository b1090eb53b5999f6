"""Leading timestamps, so errors on different ranks can be put in order.

The value is seconds within a year (month and day included, the year ignored when the log does
not print one): comparable between lines of one job, which is all attribution needs.
"""

from __future__ import annotations

import re
from typing import Optional

_TS = re.compile(
    r"""^[ \t]*\[?(?:
        (?P<glog>[EWIFD])(?P<gm>\d\d)(?P<gd>\d\d)[ ](?P<gt>\d\d:\d\d:\d\d(?:\.\d+)?)      # glog / c10
      | (?:(?P<y>\d{4})-)?(?P<m>\d\d)-(?P<d>\d\d)[ T_](?P<t>\d\d:\d\d:\d\d(?:[.,]\d+)?)  # ISO-ish
      | (?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[ ]+(?P<vm>\d\d)-(?P<vd>\d\d)[ ](?P<vt>\d\d:\d\d:\d\d(?:\.\d+)?)  # vLLM
    )""",
    re.X,
)
_DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]


def _secs(month: str, day: str, hms: str) -> Optional[float]:
    try:
        mo = int(month)
        if not 1 <= mo <= 12:
            return None
        h, mi, s = hms.replace(",", ".").split(":")
        return ((_DAYS_BEFORE[mo - 1] + int(day) - 1) * 24 + int(h)) * 3600 + int(mi) * 60 + float(s)
    except (ValueError, IndexError):
        return None


def parse_ts(text: str) -> Optional[float]:
    m = _TS.match(text)
    if m is None:
        return None
    if m.group("glog"):
        return _secs(m.group("gm"), m.group("gd"), m.group("gt"))
    if m.group("m"):
        return _secs(m.group("m"), m.group("d"), m.group("t"))
    return _secs(m.group("vm"), m.group("vd"), m.group("vt"))
