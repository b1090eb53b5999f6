"""The long tail: how fast nanscope reads each real log's own shape, worst first.

bench/run.py times two whole corpora; a shape that is rare in them but dense in a user's log (an
fp16 run whose loss scale changes every few lines, a traceback every few steps, NCCL INFO chatter)
hides in their medians. This takes every real log of sample_logs/ (framework runs and the public
excerpts, `--min-bytes` and up), appends it to itself up to `--size` (as a job that restarts and
logs the same lines again), diagnoses that in this process and times it (CPU seconds of the
diagnosis, start-up excluded), and times `grep -E -c` with the bundled keywords on the same bytes.
It prints the `--top` slowest shapes and the spread over all of them.

    python bench/tail.py --size 2M --top 12
    python bench/tail.py --size 4M --only sample_logs/torch sample_logs/deepspeed
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run import keyword_patterns  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _grep_s(path: str, patterns: str) -> float:
    t0 = time.perf_counter()
    with open(path + ".count", "wb") as out:  # never /dev/null: GNU grep stops at the first match
        subprocess.run(["grep", "-E", "-c", "-f", patterns, path], stdout=out, check=False)
    return time.perf_counter() - t0


def logs(only: list[str], min_bytes: int) -> list[str]:
    roots = only or [os.path.join(ROOT, "sample_logs")]
    found: list[str] = []
    for r in roots:
        found += [r] if os.path.isfile(r) else glob.glob(os.path.join(r, "**", "*.log"), recursive=True)
    return sorted(p for p in found if os.path.getsize(p) >= min_bytes)


def measure(paths: list[str], size: int, workdir: str) -> list[dict]:
    from nanscope.api import diagnose_sources
    from nanscope.ingest.reader import Source

    patterns = os.path.join(workdir, "patterns.txt")
    keyword_patterns(patterns)
    diagnose_sources([Source("warm.log", None, b"step 1 | loss 1.0\n")])  # imports, signatures
    rows = []
    for p in paths:
        one = open(p, "rb").read()
        if not one.endswith(b"\n"):
            one += b"\n"
        data = one * max(1, size // len(one))
        tiled = os.path.join(workdir, "tiled.log")
        with open(tiled, "wb") as f:
            f.write(data)
        t = _cpu()
        report = diagnose_sources([Source(os.path.basename(p), None, data)])
        cpu = _cpu() - t
        grep = _grep_s(tiled, patterns)
        mb = len(data) / 1e6
        rows.append({"log": os.path.relpath(p, ROOT), "MB": round(mb, 2), "nanscope_s": round(cpu, 3),
                     "MB/s": round(mb / cpu, 1), "grep_s": round(grep, 3),
                     "ratio": round(grep / cpu, 3) if cpu else None, "verdict": report.verdict})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="2M", help="bytes per shape (K/M suffix), default 2M")
    ap.add_argument("--top", type=int, default=12, help="how many of the slowest to list")
    ap.add_argument("--min-bytes", type=int, default=1024, help="skip logs shorter than this")
    ap.add_argument("--only", nargs="*", default=[], help="files or folders instead of sample_logs/")
    a = ap.parse_args(argv)
    mult = {"K": 1_000, "M": 1_000_000}.get(a.size[-1:].upper(), 1)
    size = int(float(a.size[:-1] if mult > 1 else a.size) * mult)
    paths = logs(a.only, a.min_bytes)
    if not paths:
        raise SystemExit("no logs to read")
    with tempfile.TemporaryDirectory() as d:
        rows = measure(paths, size, d)
    rows.sort(key=lambda r: r["MB/s"])
    print(f"# {len(rows)} real logs, each appended to itself up to {size / 1e6:g} MB; CPU seconds of the diagnosis "
          f"in one process (start-up excluded); grep -E -c with the bundled keywords on the same bytes")
    print("\n| log | MB | nanscope CPU s | MB/s | grep s | ratio to grep |\n|---|---|---|---|---|---|")
    for r in rows[:a.top]:
        print(f"| {r['log']} | {r['MB']} | {r['nanscope_s']} | {r['MB/s']} | {r['grep_s']} | {r['ratio']}x |")
    speeds = [r["MB/s"] for r in rows]
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    tenth = speeds[len(speeds) // 10]
    print(f"\nMB/s over all {len(rows)}: slowest {speeds[0]}, 10th percentile {tenth}, median {statistics.median(speeds)}; "
          f"ratio to grep: median {statistics.median(ratios):.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
