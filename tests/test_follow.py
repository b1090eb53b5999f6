"""`diagnose --follow`: a writer process appends a real sample log at a training job's pace while
nanscope follows it; each finding must come out while the job is still running (the writer holds
after the lines that decide it until nanscope has said so), exactly once, and the final report
follows when the job ends (--pid), the pipe closes, or on Ctrl-C. Rotation and truncation of the
file in between do not lose the lines after them.

No timing is asserted (the latency is measured in bench/follow.py); a wait only bounds how long a
broken live mode can hang the test.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT

SAMPLE = ROOT / "sample_logs" / "torch" / "ddp_nan_rank2.log"
LINES = SAMPLE.read_bytes().splitlines(keepends=True)
DECIDED_BY = 188  # rank 1's step-40 line, the last rank to log step 40 (rank 2 had the NaN at line 166)
WAIT_S = 60  # only bounds a hang

# The writer: appends lines at a pace (20 ms a line), holds at HOLD until told to go on (a line
# on its stdin), then writes the rest. Between the two parts it may rotate or truncate the file.
WRITER = r"""
import os, sys, time
path, hold, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = open(sys.argv[4], 'rb').read().splitlines(keepends=True)
def write(part):
    with open(path, 'ab', buffering=0) as f:
        for line in part:
            f.write(line)
            time.sleep(0.02)
write(lines[:100])
time.sleep(0.5)  # copytruncate loses what the follower had not read yet: let it catch up
if mode == 'rotate':
    os.rename(path, path + '.1'); open(path, 'wb').close()
elif mode == 'truncate':
    open(path, 'r+b').truncate(0)
write(lines[100:hold])
sys.stdout.write('held\n'); sys.stdout.flush()
sys.stdin.readline()
write(lines[hold:])
"""


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _reader(stream, q: queue.Queue) -> None:
    for line in iter(stream.readline, b""):
        q.put(line)
    q.put(None)


def _next(q: queue.Queue) -> bytes:
    try:
        got = q.get(timeout=WAIT_S)
    except queue.Empty:
        pytest.fail(f"nothing from nanscope --follow in {WAIT_S} s")
    return got


def _follow(tmp_path: Path, mode: str, end: str):
    """Run writer + `nanscope diagnose --follow` (jsonl); returns (messages, exit status, the
    messages read while the writer was still holding)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(DECIDED_BY), mode, str(SAMPLE)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    args = [sys.executable, "-m", "nanscope", "diagnose", "--follow", str(log), "--format", "jsonl"]
    if end == "pid":
        args += ["--pid", str(writer.pid)]
    ns = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=tmp_path)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(ns.stdout, q), daemon=True).start()
    try:
        msgs = [json.loads(_next(q))]
        assert writer.stdout.readline() == b"held\n"
        while not any(m["type"] == "finding" and m["data"]["id"] == "nan-rank-local" for m in msgs):
            line = _next(q)
            assert line is not None, "nanscope ended before the finding"
            msgs.append(json.loads(line))
        while_held = list(msgs)
        writer.stdin.write(b"go\n")
        writer.stdin.flush()
        writer.wait(timeout=WAIT_S)
        if end == "sigint":
            ns.send_signal(signal.SIGINT)
        while (line := _next(q)) is not None:
            msgs.append(json.loads(line))
        code = ns.wait(timeout=WAIT_S)
    finally:
        for p in (writer, ns):
            if p.poll() is None:
                p.kill()
    return msgs, code, while_held, ns.stderr.read()


def _check(msgs: list, code: int, while_held: list, stderr: bytes) -> None:
    assert code == 1, stderr.decode()
    types = [m["type"] for m in msgs]
    assert types[0] == "begin" and types[-2:] == ["summary", "end"]
    found = [m["data"] for m in msgs if m["type"] == "finding"]
    ids = [f["id"] for f in found]
    assert len(ids) == len(set(ids))  # each once
    assert {"nan-rank-local", "nan-skip-recover"} <= set(ids)
    # grad-norm-nonfinite (a finite loss next to a NaN grad norm: ranks 0, 1, 3) is told only if
    # nanscope looked before nan-skip-recover, which supersedes it, was decided on that rank
    assert set(ids) <= {"nan-rank-local", "nan-skip-recover", "grad-norm-nonfinite"}
    live = {m["data"]["id"]: m["data"] for m in while_held if m["type"] == "finding"}
    assert live["nan-rank-local"]["initiating_rank"] == 2 and live["nan-rank-local"]["first_step"] == 40
    assert live["nan-rank-local"]["evidence"][0]["text"] == "[default2]:step=40, loss=nan, grad_norm=nan, lr=0.001"
    assert msgs[-1]["data"] == {"verdict": "actionable", "findings": 2}  # the final report's
    summary = msgs[-2]["data"]
    assert summary["ranks_seen"] == [0, 1, 2, 3] and all(r["steps"] == 60 for r in summary["ranks"])


@pytest.mark.parametrize("mode,end", [("plain", "pid"), ("rotate", "pid"), ("truncate", "sigint")])
def test_follow_a_growing_file(tmp_path, mode, end):
    _check(*_follow(tmp_path, mode, end))


def test_follow_a_pipe_until_it_closes():
    ns = subprocess.Popen([sys.executable, "-m", "nanscope", "diagnose", "--follow", "-"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(ns.stdout, q), daemon=True).start()
    try:
        ns.stdin.write(b"".join(LINES[:DECIDED_BY]))
        ns.stdin.flush()
        first = _next(q).decode()
        assert first.startswith("nanscope: live: MEDIUM nan-rank-local at step 40, initiating rank 2 (<stdin>:166)")
        ns.stdin.write(b"".join(LINES[DECIDED_BY:]))
        ns.stdin.close()
        rest = b"".join(iter(lambda: _next(q) or b"", b"")).decode()
        assert ns.wait(timeout=WAIT_S) == 1
    finally:
        if ns.poll() is None:
            ns.kill()
    assert "nanscope: live: LOW nan-skip-recover" in rest
    assert "nanscope: ACTIONABLE" in rest and "1. MEDIUM   nan-rank-local" in rest
    assert "rank 2  " in rest and "×" in rest.split("loss by step", 1)[1]  # the final report's sparklines


def test_follow_needs_one_input(tmp_path):
    p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", "--follow", "a.log", "b.log"],
                       capture_output=True, env=_env(), cwd=tmp_path)
    assert p.returncode == 2 and b"--follow takes one FILE" in p.stderr
    p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", "--follow", "missing.log"],
                       capture_output=True, env=_env(), cwd=tmp_path)
    assert p.returncode == 2 and b"cannot follow missing.log" in p.stderr
