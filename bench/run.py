"""Benchmark: nanscope against `grep -E -c` with the bundled parsers' keywords, on the same data.

    python bench/run.py --size 1G --runs 3 --dir /work/scratch/bench
    python bench/run.py --corpus replay --size 200M --runs 3 --best --only console,perrank --dir /tmp/b

Generates (once, seeded) a console log of --size, the same job split into per-rank files, and a
folder of 1,000 small per-rank files; then times, alternating runs: grep, `nanscope diagnose`
(one file with --jobs 1 and N, then the folders), `nanscope events -o x.jsonl|x.parquet`. Prints
the median (or with --best the fastest) wall time, MB/s, the ratio of nanscope's throughput to
grep's, lines/s and the peak RSS of each command (os.wait4 of that child). Every diagnose run is
checked against the injected faults (finding id, initiating rank, first step), and on the replay
corpus against any other finding too: a fast wrong answer fails the benchmark (exit 1).

--corpus gen (default): bench/gen.py's templated log; --corpus replay: bench/replay.py's
replay of the real logs in sample_logs/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import replay  # noqa: E402

PY = sys.executable
BEST = False  # --best: the fastest of the runs (of grep and of nanscope) instead of the medians


def keyword_patterns(path: str) -> int:
    """The bundled parsers' keywords as grep -E patterns (one per line)."""
    from nanscope.parsers.registry import all_parsers

    words = sorted({k for p in all_parsers() for k in p.keywords if k})
    with open(path, "w", encoding="utf-8") as f:
        for w in words:
            f.write(re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", w) + "\n")
    return len(words)


# How collectors and launchers relay a line, in their own formats (see nanscope/ingest/wrapper.py
# and prefixes.py for where each is documented): a prefix in front, or a different line end.
WRAPS = {
    "journald": lambda ln: b"Dec  1 14:00:00 gpu-node-7 python[31337]: " + ln + b"\n",  # journalctl's `short`
    "pdsh": lambda ln: b"10.0.0.2: " + ln + b"\n",  # DeepSpeed's multi-node launcher
    "gha": lambda ln: b"2026-12-01T14:00:00.1234567Z " + ln + b"\n",  # a CI runner's raw log
    "crlf": lambda ln: ln + b"\r\n",  # a Windows console
    "colour": lambda ln: b"\x1b[32m" + ln + b"\x1b[0m\n",  # a colouring logger on a terminal
}


def wrap_file(src: str, dest: str, how) -> None:
    """src's lines, each relayed by `how` (the faults and their ranks stay what they were)."""
    with open(src, "rb") as f, open(dest + ".tmp", "wb") as out:
        for line in f:
            out.write(how(line.rstrip(b"\n")))
    os.replace(dest + ".tmp", dest)


def compile_bytecode() -> None:
    """Write nanscope's .pyc files first, as `pip install` does: where PYTHONDONTWRITEBYTECODE is
    set (as on our machines) every run would otherwise compile the package's source again (~0.1 s
    of each run, which no installed nanscope pays)."""
    import compileall

    import nanscope

    compileall.compile_dir(os.path.dirname(nanscope.__file__), quiet=1)


def timed(cmd: list[str], out: str | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit status of one command."""
    # never /dev/null: GNU grep notices it and stops at the first match
    out = out or os.path.join(os.environ.get("TMPDIR", "/tmp"), f"nanscope-bench-{os.getpid()}.out")
    t0 = time.perf_counter()
    with open(out, "wb") as sink:
        p = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read() if p.stderr else b""
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.decode(errors='replace')[-2000:]}")
    return dt, ru.ru_maxrss / 1024, p.returncode


def size_of(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def check_truth(report_path: str, truth: list[dict], allowed: list[str] | None = None) -> list[str]:
    """What the report gets wrong: a fault missed, its rank or first step wrong, and (with
    `allowed`, the ids the sources also expect) any other finding, a false alarm."""
    with open(report_path, encoding="utf-8") as f:
        r = json.load(f)
    found = {}
    for top in r["findings"]:
        for fd in [top] + list(top.get("collateral", [])):
            found.setdefault(fd["id"], fd)
    problems = []
    if allowed is not None:
        extra = sorted(set(found) - {t["id"] for t in truth} - set(allowed))
        if extra:
            problems.append(f"false alarms: {extra}")
    for t in truth:
        fd = found.get(t["id"])
        if fd is None:
            problems.append(f"{t['id']} not found (found: {sorted(found)})")
            continue
        for k in ("initiating_rank", "first_step"):
            if k in t and fd.get(k) != t[k]:
                problems.append(f"{t['id']}: {k} {fd.get(k)} != {t[k]}")
    return problems


def lines_of(report_path: str) -> int:
    with open(report_path, encoding="utf-8") as f:
        return sum(i.get("lines", 0) for i in json.load(f)["inputs"])


def bench(name: str, data: str, grep_cmd: list[str], ns_cmd: list[str], runs: int, truth, out: str,
          allowed: list[str] | None = None) -> dict:
    mb = size_of(data) / 1e6
    g, n, rss = [], [], []
    problems: list[str] = []
    for _ in range(runs):  # alternate, so drift in machine load hits both
        g.append(timed(grep_cmd)[0])
        dt, peak, _ = timed(ns_cmd, out if ns_cmd[3] == "diagnose" and "-o" not in ns_cmd else None)
        n.append(dt)
        rss.append(peak)
        if truth is not None:
            problems = check_truth(out, truth, allowed)
            if problems:
                break
    gm, nm = (min(g), min(n)) if BEST else (statistics.median(g), statistics.median(n))
    lines = lines_of(out) if truth is not None else None
    row = {"case": name, "MB": round(mb, 1), "grep_s": round(gm, 2), "nanscope_s": round(nm, 2),
           "grep_MB/s": round(mb / gm, 1), "nanscope_MB/s": round(mb / nm, 1), "ratio": round(gm / nm, 3),
           "lines/s": int(lines / nm) if lines else None, "peak_RSS_MiB": round(max(rss), 1),
           "truth": "ok" if truth is not None and not problems else ("-" if truth is None else "; ".join(problems))}
    print(json.dumps(row), flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1G")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/nanscope-bench")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--only", default="console,events,perrank,many", help="comma list of cases")
    ap.add_argument("--corpus", choices=("gen", "replay"), default="gen",
                    help="gen: bench/gen.py's templated log; replay: bench/replay.py's replay of sample_logs/")
    ap.add_argument("--best", action="store_true", help="report the best of --runs, not the median")
    ap.add_argument("--wrap", choices=sorted(WRAPS), help="relay every line of the one-file corpus as this "
                    "collector or launcher does (its own prefix / line end in front of or around each line)")
    a = ap.parse_args(argv)
    global BEST
    BEST = a.best
    os.makedirs(a.dir, exist_ok=True)
    size = gen.parse_size(a.size)
    only = set(a.only.split(","))
    tag = "" if a.corpus == "gen" else "replay_"
    console = os.path.join(a.dir, f"{tag}console_{a.size}.log")
    plain_console = console
    if a.wrap:
        console = os.path.join(a.dir, f"{tag}console_{a.size}.{a.wrap}.log")
    perrank = os.path.join(a.dir, f"{tag}perrank_{a.size}")
    many = os.path.join(a.dir, f"many_{a.files}")
    if a.corpus == "gen":
        job = gen.job_for_size(size, 8, 1, False)
        truth, allowed = job.truth(), None
        write_console = lambda path: gen.write_console(path, gen.job_for_size(size, 8, 1, False))  # noqa: E731
        write_per_rank = lambda path: gen.write_per_rank(path, gen.job_for_size(size, 8, 1, False))  # noqa: E731
    else:
        truth, allowed = replay.truth(size), replay.allowed()
        write_console = lambda path: replay.write_console(path, size)  # noqa: E731
        write_per_rank = lambda path: replay.write_per_rank(path, size)  # noqa: E731
    if not os.path.exists(plain_console) and only & {"console", "events"}:
        print(f"generating {plain_console} ...", file=sys.stderr)
        write_console(plain_console)
    if a.wrap and not os.path.exists(console) and only & {"console", "events"}:
        print(f"relaying it as {a.wrap} into {console} ...", file=sys.stderr)
        wrap_file(plain_console, console, WRAPS[a.wrap])
    if not os.path.exists(perrank) and "perrank" in only:
        print(f"generating {perrank}/ ...", file=sys.stderr)
        write_per_rank(perrank)
    many_truth = None
    if "many" in only:
        steps = 200
        if not os.path.exists(many):
            gen.write_many(many, a.files, steps, 1)
        bad = a.files // 2 + 17 if a.files > 40 else a.files - 1
        many_truth = [{"id": "nan-rank-local", "initiating_rank": bad, "first_step": steps // 2}]
    pats = os.path.join(a.dir, "patterns.txt")
    n = keyword_patterns(pats)
    out = os.path.join(a.dir, "report.json")
    ns = [PY, "-m", "nanscope"]
    compile_bytecode()
    print(f"# {n} keyword patterns; nproc {os.cpu_count()}; runs {a.runs}", file=sys.stderr)
    rows = []
    failed = False
    if "console" in only:
        for j in sorted({1, a.jobs}):
            rows.append(bench(f"{a.corpus}: diagnose one file, --jobs {j}", console, ["grep", "-E", "-c", "-f", pats, console],
                              ns + ["diagnose", console, "--format", "json", "--jobs", str(j)], a.runs, truth, out,
                              allowed))
    if "events" in only:
        for ext in ("jsonl", "parquet"):
            dest = os.path.join(a.dir, f"events.{ext}")
            rows.append(bench(f"events -o x.{ext}", console, ["grep", "-E", "-c", "-f", pats, console],
                              ns + ["events", console, "-o", dest], a.runs, None, out))
    if "perrank" in only:
        for j in sorted({1, a.jobs}):
            rows.append(bench(f"{a.corpus}: diagnose per-rank files, --jobs {j}", perrank,
                              ["grep", "-E", "-c", "-r", "-f", pats, perrank],
                              ns + ["diagnose", perrank, "--format", "json", "--jobs", str(j)], a.runs,
                              truth, out, allowed))
    if "many" in only:
        for j in sorted({1, a.jobs}):
            rows.append(bench(f"diagnose {a.files} small files, --jobs {j}", many, ["grep", "-E", "-c", "-r", "-f", pats, many],
                              ns + ["diagnose", many, "--format", "json", "--jobs", str(j)], a.runs, many_truth, out))
    for r in rows:
        if r["truth"] not in ("ok", "-"):
            failed = True
    print("\n| case | MB | grep s | nanscope s | nanscope MB/s | ratio to grep | lines/s | peak RSS MiB | faults found |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['MB']} | {r['grep_s']} | {r['nanscope_s']} | {r['nanscope_MB/s']} | {r['ratio']}x | "
              f"{r['lines/s'] or '-'} | {r['peak_RSS_MiB']} | {r['truth']} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
