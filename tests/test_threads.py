"""RE2 passes run in slices on threads (nanscope/columns.py sliced): the same rows, in order."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from nanscope import columns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def three_threads(monkeypatch):
    monkeypatch.setattr(columns, "THREADS", 3)
    monkeypatch.setattr(columns, "_SLICE_ROWS", 7)
    yield


def _lines() -> pa.Array:
    with open(os.path.join(ROOT, "sample_logs", "torch", "ddp_nan_rank2.log"), "rb") as f:
        return pa.array(f.read().split(b"\n") * 3, pa.binary())


def test_sliced_match_is_the_whole_match(three_threads) -> None:
    lines = _lines()
    want = pc.match_substring_regex(lines, r"loss[=:] ?nan")
    got = columns.sliced(pc.match_substring_regex, lines, r"loss[=:] ?nan")
    assert len(lines) > 3 * 7 * 2 and got.equals(want) and pc.sum(got).as_py() > 0


def test_sliced_extract_keeps_row_order(three_threads) -> None:
    lines = _lines()
    want = pc.extract_regex(lines, r"step[= ](?P<step>\d+)")
    assert columns.sliced(pc.extract_regex, lines, r"step[= ](?P<step>\d+)").equals(want)


def test_threads_env_and_share(monkeypatch) -> None:
    monkeypatch.setenv("NANSCOPE_THREADS", "5")
    assert columns.threads_for(2) == 5
    monkeypatch.delenv("NANSCOPE_THREADS")
    assert columns.threads_for(10_000) == 1


def test_same_report_with_and_without_threads(tmp_path) -> None:
    """A log big enough for slices: the JSON findings with 2 threads are those with 1."""
    src = os.path.join(ROOT, "sample_logs", "torch", "ddp_nan_rank2.log")
    big = tmp_path / "big.log"
    with open(src, "rb") as f:
        data = f.read()
    with open(big, "wb") as f:
        f.write(data * max(1, (3 << 20) // len(data)))
    out = []
    for n in ("1", "2"):
        env = dict(os.environ, NANSCOPE_THREADS=n)
        p = subprocess.run([sys.executable, "-m", "nanscope", "diagnose", "--jobs", "1", "--format", "json", str(big)],
                           capture_output=True, env=env, cwd=ROOT)
        rep = json.loads(p.stdout)
        out.append([(x["id"], x["initiating_rank"], x["first_step"], x["occurrences"]) for x in rep["findings"]])
    assert out[0] == out[1] and out[0]
