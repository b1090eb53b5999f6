"""Untrusted log text in every sink (issue: hostile input, second pass): invisible and control
characters never pass raw, a GitHub runner reading the text report runs nothing, and a number too
large for any column is not a crash."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from nanscope.report import FORMATS

# C0, C1 (CSI), a bidi override, zero-width and direction marks, the BOM.
HOSTILE = ["\u0017", "\u009b", "\u202e", "\u200b", "\u200e", "\u200f", "\u061c", "\ufeff"]
LINE = ("[rank1]: RuntimeError: boom " + " ".join(f"x{c}y" for c in HOSTILE)
        + " ##[error]owned " + "word " * 12 + "::error::owned\n")
LOG = ("[rank0]: step=1, loss=2.0\n[rank1]: step=1, loss=2.0\n" + "[rank1]: Traceback (most recent call last):\n"
       + LINE).encode()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_no_invisible_or_control_character_reaches_a_report(fmt):
    p = run_cli("diagnose", "-", "--format", fmt, stdin=LOG)
    assert p.returncode in (0, 1), p.stderr
    out = p.stdout.decode("utf-8")
    assert "boom" in out or fmt in ("junit",)
    for c in HOSTILE:
        assert c not in out, (fmt, hex(ord(c)))
    if fmt in ("json", "jsonl", "sarif"):
        for line in out.splitlines() if fmt == "jsonl" else [out]:
            json.loads(line)


def test_the_text_report_runs_no_workflow_command():
    out = run_cli("diagnose", "-", stdin=LOG).stdout.decode()
    assert "##[" not in out
    assert not [ln for ln in out.splitlines() if ln.lstrip().startswith("::")]


def test_events_to_a_terminal_carry_no_raw_c1_or_bidi():
    out = run_cli("events", "-", stdin=LOG).stdout.decode()
    for c in HOSTILE[1:]:
        assert c not in out
    assert [json.loads(ln) for ln in out.splitlines()]


@pytest.mark.parametrize("args", [("diagnose", "-", "--format", "json"), ("events", "-")])
def test_a_step_too_large_for_a_column_is_no_crash(args):
    p = run_cli(*args, stdin=b"step=1, loss=2.0\nstep=99999999999999999999, loss=nan\n")
    assert p.returncode in (0, 1) and b"internal error" not in p.stderr


def test_a_step_too_large_is_no_crash_in_parquet(tmp_path):
    log = tmp_path / "x.log"
    log.write_bytes(b"step=1, loss=2.0\nstep=99999999999999999999, loss=nan\n")
    p = run_cli("events", str(log), "-o", str(tmp_path / "x.parquet"))
    assert p.returncode == 0, p.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "x.parquet").num_rows == 2
