"""The reader on a thread of its own (nanscope/ingest/ahead.py): the same report and the same counts
as reading in line with the parsers, the reader's errors raised where the items are taken, and a
consumer that stops early stops the reader."""

from __future__ import annotations

import gzip
import threading

import pytest

from conftest import SAMPLES
from nanscope import api, pipeline
from nanscope.ingest.ahead import Ahead
from nanscope.model import InputInfo
from nanscope.report.json import dumps


def _report(paths, ahead: bool, monkeypatch) -> dict:
    import json

    monkeypatch.setattr(pipeline, "READ_AHEAD", ahead)
    monkeypatch.setenv("NANSCOPE_THREADS", "2")  # (a core to spare, as on the bench machine)
    out = json.loads(dumps(api.diagnose([str(p) for p in paths], api.Options(jobs=1))))
    out["tool"].pop("elapsed_s", None)
    return out


LOGS = sorted(p for p in SAMPLES.glob("*/*.log") if p.parent.name != "public")


@pytest.mark.parametrize("path", LOGS[::3], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_log_read_ahead_gives_the_report_read_in_line(path, monkeypatch):
    assert _report([path], True, monkeypatch) == _report([path], False, monkeypatch)


def test_counts_of_a_damaged_binary_input_are_the_same(tmp_path, monkeypatch):
    """NUL bytes, invalid UTF-8, an over-long line and a truncated gzip: the reader's counts, kept
    apart while it runs, end up in the input's."""
    body = (b"step=1, loss=2.5\n\xff\xfe bad bytes\nplain \x00\x00 nul\n" + b"x" * 70000 + b"\n"
            + b"step=2, loss=nan\n") * 50
    path = tmp_path / "run.log.gz"
    path.write_bytes(gzip.compress(body)[:-20])
    a, b = _report([path], True, monkeypatch), _report([path], False, monkeypatch)
    assert a == b
    (inp,) = a["inputs"]
    assert inp["lines"] > 0 and any(d["code"] == "NS-IO-INCOMPLETE" for d in a["diagnostics"]), a["diagnostics"]


def test_an_error_in_the_reader_is_raised_to_the_consumer():
    def broken(info):
        yield 1, b"x", ()
        raise OSError("disk gone")

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for item in Ahead(broken, InputInfo("x", None)):
            got.append(item)
    assert got == [(1, b"x", ())]


def test_a_consumer_that_stops_early_stops_the_reader():
    made = []

    def endless(info):
        n = 0
        while True:
            n += 1
            made.append(n)
            yield n, b"line", ()

    it = iter(Ahead(endless, InputInfo("x", None)))
    assert next(it)[0] == 1
    it.close()
    assert not [t for t in threading.enumerate() if t.name == "nanscope-read-ahead"]
    assert len(made) < 10_000  # (it stopped a few batches ahead, not at the end of time)
