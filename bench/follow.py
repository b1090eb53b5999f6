"""Latency of `nanscope diagnose --follow`: from the moment the line that decides a finding is
written to the moment the finding's JSON line reaches the reader of nanscope's stdout.

For each real sample log (sample_logs/, in manifest order, until --min findings were measured):

1. Which line decides each finding: the log is replayed in-process one line per read, nanscope
   looking for findings before every read (api.follow with a replay stream); a finding first
   told before line k+1 was read is decided by line k. Deterministic.
2. The timed run: a writer appends the log to a file at a training job's pace (--pace seconds a
   line), while `nanscope diagnose --follow FILE --format jsonl --pid JOB` runs as its own process
   (JOB: a stand-in process that ends when the writer is done); a thread reads nanscope's stdout
   and stamps each line as it arrives. Latency = arrival - the time the deciding line was written
   (flushed, unbuffered). A finding the timed run told that the replay did not (a finding that a
   stronger one decided in the same look supersedes) is left out.

    python bench/follow.py --min 50 --pace 0.005          # prints a table and the median / p99
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Replay:
    """One line per read; the live callback runs before each read (api.follow sets `idle`)."""

    def __init__(self, lines: list[bytes]):
        self.lines = lines
        self.i = 0
        self.idle = None

    def read(self, n: int = -1) -> bytes:
        if self.idle is not None:
            self.idle()
        if self.i >= len(self.lines):
            return b""
        self.i += 1
        return self.lines[self.i - 1]

    def close(self) -> None:
        pass


def deciding_lines(lines: list[bytes]) -> dict[str, int]:
    from nanscope import api

    replay = _Replay(lines)
    got: dict[str, int] = {}
    api.follow("replay", on_finding=lambda f: got.setdefault(f.id, replay.i), stream=replay)
    return got


def timed(lines: list[bytes], pace: float) -> dict[str, float]:
    """finding id -> latency in seconds, for each finding the timed run told."""
    decided = deciding_lines(lines)
    if not decided:
        return {}
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "train.log"
        log.write_bytes(b"")
        job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        ns = subprocess.Popen([sys.executable, "-m", "nanscope", "diagnose", "--follow", str(log), "--format", "jsonl",
                               "--pid", str(job.pid)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        arrivals: dict[str, float] = {}
        began = threading.Event()

        def read() -> None:
            for raw in iter(ns.stdout.readline, b""):
                t = time.monotonic()
                msg = json.loads(raw)
                if msg["type"] == "begin":
                    began.set()
                elif msg["type"] == "finding":
                    arrivals.setdefault(msg["data"]["id"], t)
            began.set()

        th = threading.Thread(target=read, daemon=True)
        th.start()
        began.wait(60)
        time.sleep(0.2)  # the begin message comes just before the first read
        written = []
        with open(log, "ab", buffering=0) as f:
            for line in lines:
                f.write(line)
                written.append(time.monotonic())
                time.sleep(pace)
        time.sleep(1.0)
        job.kill()
        job.wait()
        ns.wait(timeout=120)
        th.join(10)
    return {fid: arrivals[fid] - written[k - 1] for fid, k in decided.items() if fid in arrivals}


def sample_logs() -> list[Path]:
    out = []
    for manifest in sorted((ROOT / "sample_logs").glob("*/MANIFEST.toml")):
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
        for case in data.get("log", []):
            p = manifest.parent / case["path"]
            if p.is_file() and not case.get("healthy"):
                out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min", type=int, default=50, help="stop once this many findings were measured")
    ap.add_argument("--pace", type=float, default=0.005, help="seconds between two lines the writer appends")
    ap.add_argument("--max-lines", type=int, default=2000, help="logs longer than this are skipped")
    ap.add_argument("--json", help="also write the measurements here")
    args = ap.parse_args()
    rows = []
    for p in sample_logs():
        lines = p.read_bytes().splitlines(keepends=True)
        if len(lines) > args.max_lines:
            continue
        for fid, lat in sorted(timed(lines, args.pace).items(), key=lambda kv: kv[1]):
            rows.append((str(p.relative_to(ROOT)), fid, lat))
            print(f"{lat * 1000:8.1f} ms  {fid:<34} {p.relative_to(ROOT)}", flush=True)
        if len(rows) >= args.min:
            break
    lats = sorted(r[2] for r in rows)
    if not lats:
        sys.exit("no findings measured")
    p99 = lats[min(len(lats) - 1, int(round(0.99 * (len(lats) - 1))))]
    result = {"findings": len(lats), "logs": len({r[0] for r in rows}), "pace_s": args.pace,
              "median_ms": round(statistics.median(lats) * 1000, 1), "p99_ms": round(p99 * 1000, 1),
              "max_ms": round(lats[-1] * 1000, 1), "over_1s": sum(x > 1.0 for x in lats)}
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": result, "rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
