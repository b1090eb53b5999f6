"""Are the parsers linear in line length? Time every rule's regex (and every module-level pattern
the builders run) on hostile lines of n and 2n characters, and the whole pipeline on issue 20's
line (`step=1, loss=2.0 ` and then n `x`).

    python bench/linearity.py [--n 2000]   (at --n 20000 the pattern part runs over 30 minutes)

A hostile line is a rule keyword followed by n characters of one repeated unit (`x`, `a.`,
spaces, digits, `{`, `[`, ...), or the keyword itself repeated. Each time is CPU time
(process_time), the best of 3: the machine is shared. The structural check that the suite
runs instead (no timed tests) is nanscope/parsers/linearity.py.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nanscope.parsers as pkg  # noqa: E402
from nanscope.api import Options, diagnose_sources  # noqa: E402
from nanscope.ingest.reader import Source  # noqa: E402
from nanscope.parsers.registry import all_parsers  # noqa: E402

UNITS = ["x", "a.", "1", " ", ":", "a ", "=", "1.", "a1", "a=", "a: ", "_", "/", "-", "[", "(", "a,", "0x",
         "\t", "a b", "e", "nan ", "1 ", "a:1 ", "'", '"', "{", ",", "a/", "`"]


def best(fn, k: int = 3) -> float:
    out = []
    for _ in range(k):
        t = time.process_time()
        fn()
        out.append(time.process_time() - t)
    return min(out)


def patterns():
    for p in all_parsers():
        for r in p.rules:
            yield f"{p.name}/{r.name}", r.regex, r.match_start, r.keywords
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for name, v in vars(mod).items():
            if isinstance(v, re.Pattern):
                yield f"{info.name}.{name}", v, False, ("",)


def run_pattern(rx: "re.Pattern[str]", match_start: bool, line: str) -> None:
    if match_start:
        rx.match(line)
    else:
        for _ in rx.finditer(line):
            pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    worst = []
    for name, rx, ms, kws in patterns():
        for kw in kws[:2]:
            lines = [kw + " " + u * (n // len(u)) for u in UNITS] + ([(kw + " ") * (n // (len(kw) + 1))] if kw else [])
            for line in lines:
                t1 = best(lambda: run_pattern(rx, ms, line))
                line2 = line + line[len(kw) + 1:]
                t2 = best(lambda: run_pattern(rx, ms, line2))
                worst.append((t2, t2 / max(t1, 1e-6), name, repr(line[len(kw):len(kw) + 6])))
    worst.sort(reverse=True)
    print(f"slowest patterns on hostile lines of {2 * n} characters (time, ratio to {n}):")
    for t2, ratio, name, unit in worst[:8]:
        print(f"  {t2 * 1000:8.2f} ms  x{ratio:4.1f}  {name:<40} unit {unit}")
    print("whole pipeline on 'step=1, loss=2.0 ' + n x:")
    for m in (20000, 40000, 80000):
        data = b"step=1, loss=2.0 " + b"x" * m + b"\n"
        t = best(lambda: diagnose_sources([Source("x.log", None, data)], Options()), k=1)
        print(f"  n={m:>6}: {t:6.2f} s")


if __name__ == "__main__":
    main()
