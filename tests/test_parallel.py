"""Several files read by worker processes give exactly the sequential report."""

from __future__ import annotations

import json
import shutil
import signal

import pytest

from conftest import ROOT, run_cli
from nanscope import api
from nanscope.report import json as json_report

PER_RANK = "sample_logs/torch/ddp_nan_rank2_per_rank"


def _report(paths: list[str], jobs: int) -> dict:
    r = json.loads(json_report.dumps(api.diagnose(paths, api.Options(jobs=jobs))))
    r["tool"].pop("elapsed_s", None)
    r.pop("elapsed_s", None)
    return r


def test_parallel_report_equals_sequential(monkeypatch):
    monkeypatch.chdir(ROOT)
    seq = _report([PER_RANK], jobs=1)
    par = _report([PER_RANK], jobs=2)
    assert par == seq
    ids = {f["id"] for f in par["findings"]}
    assert "nan-rank-local" in ids  # only visible with all four files merged
    assert [i["path"] for i in par["inputs"]] == [f"{PER_RANK}/rank_{r}.log" for r in range(4)]


def test_parallel_events_keep_input_order(monkeypatch):
    monkeypatch.chdir(ROOT)
    seq = [(e.loc.source, e.loc.line, e.kind, e.step) for e in api.events([PER_RANK], api.Options(jobs=1))]
    par = [(e.loc.source, e.loc.line, e.kind, e.step) for e in api.events([PER_RANK], api.Options(jobs=3))]
    assert par == seq and len(seq) > 200


def test_unreadable_file_in_a_parallel_run_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    d = tmp_path / "logs"
    shutil.copytree(ROOT / PER_RANK, d)
    (d / "rank_1.log").unlink()
    (d / "rank_1.log").symlink_to(tmp_path / "gone.log")  # listed, but cannot be opened
    (d / "rank_9.log").write_bytes(b"\xff\xfe step 3 | loss 2.0\n")
    seq = _report([str(d)], jobs=1)
    par = _report([str(d)], jobs=2)
    assert par == seq
    assert any(x["code"] == "NS-IO-UNREADABLE" for x in par["diagnostics"])
    assert any(x["code"] == "NS-IO-INVALID-UTF8" for x in par["diagnostics"])


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_jobs_option(jobs):
    p = run_cli("diagnose", PER_RANK, "--format", "json", "--jobs", jobs)
    assert p.returncode == 1, p.stderr
    r = json.loads(p.stdout)
    assert {f["id"] for f in r["findings"]} >= {"nan-rank-local"}
    assert b"Traceback" not in p.stderr


def test_cli_jobs_must_be_positive():
    p = run_cli("diagnose", PER_RANK, "--jobs", "0")
    assert p.returncode == 2


def test_parent_reads_a_file_while_its_worker_still_writes_it(monkeypatch):
    """Messages of a few events each, written slowly: the parent feeds them as they come (the
    spill file is read while it grows) and the report is still the sequential one."""
    import time

    import nanscope.parallel as parallel

    monkeypatch.chdir(ROOT)
    seq = _report([PER_RANK], jobs=1)
    real = parallel.scan_source

    def slow(*a, **k):
        for n, ev in enumerate(real(*a, **k)):
            if n % 50 == 0:
                time.sleep(0.01)
            yield ev

    monkeypatch.setattr(parallel, "scan_source", slow)
    monkeypatch.setattr(parallel, "BATCH", 7)
    assert _report([PER_RANK], jobs=2) == seq


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_worker_that_dies_mid_file_is_an_error_not_a_hang(monkeypatch, how):
    """A worker that fails (an exception) or disappears (killed) while the parent reads its file
    ends the run with a clear error."""
    import os

    import nanscope.parallel as parallel
    from nanscope.errors import NanscopeError

    monkeypatch.chdir(ROOT)
    real = parallel.scan_source

    def dying(src, *a, **k):
        for n, ev in enumerate(real(src, *a, **k)):
            if n == 20 and src.name.endswith("rank_1.log"):
                if how == "raise":
                    raise RuntimeError("boom")
                os._exit(3)
            yield ev

    monkeypatch.setattr(parallel, "scan_source", dying)
    monkeypatch.setattr(parallel, "BATCH", 5)

    def hung(*_):
        raise AssertionError("the parent still waits for a dead worker's file after 60 s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        with pytest.raises(NanscopeError, match="rank_1.log failed: RuntimeError: boom" if how == "raise"
                           else "ended unexpectedly \\(exit code 3\\)"):
            _report([PER_RANK], jobs=2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
