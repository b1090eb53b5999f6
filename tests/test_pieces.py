"""One file read in pieces (nanscope/pieces.py) gives exactly the sequential report: findings,
ranks, evidence lines and their line numbers, the per-rank table, the inputs' counts, events."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import sys

import pytest

from conftest import ROOT, SAMPLES, run_cli
from nanscope import api, parallel, pieces
from nanscope.ingest import reader
from nanscope.ingest.reader import Source, expand_sources
from nanscope.model import InputInfo
from nanscope.pipeline import io_diagnostics, in_order
from nanscope.report import json as json_report
from nanscope.scan import scan_all

sys.path.insert(0, str(ROOT / "bench"))
import replay  # noqa: E402  (bench/replay.py: the real sample logs replayed to any size)

ALL_LOGS = sorted(p for p in SAMPLES.rglob("*.log"))
TRACEBACKS = [SAMPLES / "faults" / "ddp_handled_exception.log", SAMPLES / "multinode" / "stall_timeout.log",
              SAMPLES / "hf" / "trainer_ddp_nan.log", SAMPLES / "faults" / "multinode_crash_console.log"]


def _record(report) -> dict:
    r = json.loads(json_report.dumps(report))
    r["tool"].pop("elapsed_s", None)
    r.pop("elapsed_s", None)
    return r


def _report(paths, **kw) -> dict:
    return _record(api.diagnose([str(p) for p in paths], api.Options(**kw)))


@pytest.fixture
def tiny(monkeypatch):
    """Pieces of 1 KiB read in reads of 512 bytes: the cuts fall inside tracebacks, HF dicts
    waiting for their bar, torchrun's failure blocks."""
    monkeypatch.setattr(pieces, "PIECE_BYTES", 1024)
    monkeypatch.setattr(pieces, "REGION_BYTES", 512)


def _in_pieces_here(sources, options, result):
    """scan_all with every splittable input read as the Dask tasks read it (pieces.piece_task,
    pieces.overrun_task from the state a piece ended in), one after the other in this process."""
    _in_pieces_here.taken = taken = []
    for src in sources:
        plan = pieces.plan_split(src, 0, options.max_line_bytes, pieces.PIECE_BYTES)
        if plan is None:  # (lines longer than a read: no cut is a boundary of every read)
            yield from scan_all([src], dataclasses.replace(options, jobs=1), result)
            continue
        reads = [pieces.piece_task(0, src, options, plan, p) for p in range(len(plan.starts))]
        overs = [pieces.overrun_task(src, options, plan, p, pieces.end_state(reads[p], plan),
                                     [pieces.piece_states(r) for r in reads[p + 1:]]) for p in range(len(plan.starts) - 1)]
        done = pieces.Stitched(InputInfo(path=src.name, size=plan.size), {}, [])
        yield from in_order(pieces.stitch(plan, lambda p: iter(reads[p].messages), lambda p: iter(overs[p]), done),
                            options.ahead)
        result.inputs.append(done.info)
        io_diagnostics(src, done.info, done.marks, options.max_line_bytes, plan.size, result)
        taken.append((plan, done.taken))


def test_every_sample_log_in_tiny_pieces_gives_the_sequential_report(tiny, monkeypatch):
    monkeypatch.chdir(ROOT)
    logs = [p.relative_to(ROOT) for p in ALL_LOGS]
    assert len(logs) > 400 and any(p.parts[1] == "public" for p in logs)
    expected = {p: _report([p], jobs=1) for p in logs}
    monkeypatch.setattr(api, "scan_all", _in_pieces_here)
    differ, split, carried = [], 0, 0
    for p in logs:
        region = min(512, max(128, (ROOT / p).stat().st_size // 8))  # a short excerpt is cut too
        monkeypatch.setattr(pieces, "REGION_BYTES", region)
        monkeypatch.setattr(pieces, "PIECE_BYTES", 2 * region)
        if _report([p], jobs=1) != expected[p]:
            differ.append(str(p))
        for plan, taken in _in_pieces_here.taken:
            split += 1
            carried += sum(1 for q, _frm, met in taken if met is not None and met > plan.end(q))
    assert differ == []
    assert split > 360  # the others are empty, one line, or lines longer than a read of 128 bytes
    assert carried > 50  # and many overruns read past a cut: a state carried across it


def test_without_the_overrun_the_pieces_would_be_wrong(tiny, monkeypatch):
    """The check above can fail: a piece that trusts its fresh state gives other reports."""
    monkeypatch.chdir(ROOT)
    logs = [p.relative_to(ROOT) for p in TRACEBACKS]
    expected = {p: _report([p], jobs=1) for p in logs}
    monkeypatch.setattr(api, "scan_all", _in_pieces_here)
    monkeypatch.setattr(pieces, "same_state", lambda mine, theirs: True)
    assert sum(_report([p], jobs=1) != expected[p] for p in logs) >= 3


@pytest.mark.parametrize("log", TRACEBACKS, ids=lambda p: p.name)
def test_worker_processes_read_one_file_in_pieces(tiny, log):
    expected = _report([log], jobs=1)
    notes: list = []
    got = _report([log], jobs=2, note=notes.append)
    assert got == expected
    assert notes[0] == "1 input(s) read with --jobs 2, 1 of them in pieces"
    assert "pieces" in notes[1] and "by this process and 1 worker process(es)" in notes[1]


def test_several_inputs_in_pieces_go_to_the_workers(tiny):
    logs = TRACEBACKS[:2]
    expected = _report(logs, jobs=1)
    notes: list = []
    assert _report(logs, jobs=2, note=notes.append) == expected
    assert notes[0] == "2 input(s) read with --jobs 2, 2 of them in pieces"
    assert all("by 2 worker processes" in n for n in notes[1:]) and len(notes) == 3


def test_events_and_text_report_of_a_file_in_pieces(tiny):
    log = str(SAMPLES / "multinode" / "stall_timeout.log")
    seq = [(e.kind, e.loc.line, e.rank, e.step, e.text) for e in api.events([log], api.Options(jobs=1))]
    par = [(e.kind, e.loc.line, e.rank, e.step, e.text) for e in api.events([log], api.Options(jobs=2))]
    assert par == seq and len(seq) > 50
    import io

    from nanscope.report import RenderOptions, render

    def text(jobs: int) -> str:
        report = api.diagnose([log], api.Options(jobs=jobs))
        report.elapsed_s = 0.0
        out = io.StringIO()
        render("text", report, out, RenderOptions())
        return out.getvalue()

    assert text(2) == text(1)


def test_an_overrun_that_never_meets_reads_to_the_end_and_is_still_right(tiny, monkeypatch):
    log = SAMPLES / "multinode" / "stall_timeout.log"
    expected = _report([log], jobs=1)
    monkeypatch.setattr(pieces, "same_state", lambda mine, theirs: False)
    notes: list = []
    assert _report([log], jobs=2, note=notes.append) == expected
    assert "piece 1 read on to the end" in notes[1]


def test_pieces_and_whole_files_together(tiny, tmp_path):
    """A compressed input cannot be cut: it is read whole beside the pieces of the others."""
    gz = tmp_path / "crash.log.gz"
    gz.write_bytes(gzip.compress((SAMPLES / "torch" / "ddp_crash_rank1.log").read_bytes()))
    plain = tmp_path / "stall.log"
    shutil.copy(SAMPLES / "multinode" / "stall_timeout.log", plain)
    sources = expand_sources([str(gz), str(plain)])
    workers, plans = parallel.plan_work(sources, 2)
    assert workers == 2 and list(plans) == [1]
    assert _report([gz, plain], jobs=2) == _report([gz, plain], jobs=1)


def test_nul_bytes_invalid_utf8_and_long_lines_are_counted_once(tiny, tmp_path):
    """Damaged input (synthetic: a crashed writer's NUL hole, bytes that are not UTF-8, a line
    over the cap) around the cuts: the counts and the first positions are the whole file's."""
    text = (SAMPLES / "multinode" / "stall_timeout.log").read_bytes()
    lines = text.split(b"\n")
    for k in range(5, len(lines), 17):
        lines[k] = lines[k] + b"\x00" * (k % 3 + 1) + b"\xff\xfe tail"
    lines[40] = b"x" * 3000  # longer than max_line below
    log = tmp_path / "damaged.log"
    log.write_bytes(b"\n".join(lines))
    expected = _report([log], jobs=1, max_line_bytes=2048)
    got = _report([log], jobs=2, max_line_bytes=2048)
    assert got == expected
    codes = {d["code"] for d in got["diagnostics"]}
    assert {"NS-IO-BINARY-REGION", "NS-IO-INVALID-UTF8", "NS-IO-LONG-LINE"} <= codes


def test_the_reads_of_a_piece_end_where_the_whole_file_s_reads_end(tmp_path):
    """pieces.grid_next is the sequential reader's read pattern (the read-ahead head first)."""
    log = tmp_path / "big.log"
    replay.write_console(str(log), 5 << 20)
    ends: list = []
    real = reader.ReadAhead.read

    def read(self, n):
        data = real(self, n)
        if data:
            ends.append((ends[-1] if ends else 0) + len(data))
        return data

    with pytest.MonkeyPatch.context() as m:
        m.setattr(reader.ReadAhead, "read", read)
        api.diagnose([str(log)], api.Options(jobs=1))
    want, pos = [], 0
    while pos < log.stat().st_size:
        pos = min(pieces.grid_next(pos, reader.CHUNK_BYTES, pieces.HEAD_BYTES), log.stat().st_size)
        want.append(pos)
    assert ends == want


def test_a_plan_cuts_only_where_every_read_has_a_region_boundary(tmp_path):
    log = tmp_path / "big.log"
    replay.write_console(str(log), 12 << 20)
    src = expand_sources([str(log)])[0]
    plan = pieces.plan_split(src, 3, reader.MAX_LINE_BYTES)
    assert plan is not None and len(plan.starts) == 3
    data = log.read_bytes()
    for s in plan.starts[1:]:
        assert data[s - 1:s] == b"\n"
        g = pieces.grid_next(s - 1, plan.region, plan.head)  # the read that holds the newline before the cut
        assert g in plan.sync and data.rfind(b"\n", 0, g) == s - 1
    for bad in (Source("<stdin>", None), Source("mem", None, data=data)):
        assert pieces.plan_split(bad, 3, reader.MAX_LINE_BYTES) is None
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(data[: 3 << 20]))
    assert pieces.plan_split(expand_sources([str(gz)])[0], 3, reader.MAX_LINE_BYTES) is None


def test_when_a_file_is_split_by_default(monkeypatch, tmp_path):
    log = tmp_path / "big.log"
    replay.write_console(str(log), 6 << 20)
    sources = expand_sources([str(log)])
    assert parallel.plan_work(sources, None) == (0, {})  # small: one process
    assert parallel.plan_work(sources, 1) == (0, {})
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    monkeypatch.setattr(pieces, "AUTO_SPLIT_BYTES", 4 << 20)
    workers, plans = parallel.plan_work(sources, None)
    assert workers == 2 and len(plans[0].starts) == 2
    # the parent, which also runs the engine, reads less than the worker: first_share of it, to a read's grain
    share = parallel.first_share(2)
    assert 0.5 < share < 1
    assert abs(plans[0].starts[1] - log.stat().st_size * share / (1 + share)) <= reader.CHUNK_BYTES
    monkeypatch.setattr(pieces, "SPLIT_MIN_BYTES", 16 << 20)
    assert parallel.plan_work(sources, 2) == (0, {})  # --jobs 2 on a file under SPLIT_MIN_BYTES


def test_cli_jobs_2_reads_a_large_file_in_pieces(tmp_path):
    """At the real sizes (reads of 2 MiB, the native lane's batches), through the CLI."""
    log = tmp_path / "replay.log"
    replay.write_console(str(log), pieces.SPLIT_MIN_BYTES * 9 // 8)
    assert log.stat().st_size >= pieces.SPLIT_MIN_BYTES
    one = run_cli("diagnose", str(log), "-f", "json", "--jobs", "1")
    two = run_cli("diagnose", str(log), "-f", "json", "--jobs", "2", "--verbose")
    assert one.returncode == two.returncode == 1, two.stderr.decode()[-2000:]
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    for r in (a, b):
        r["tool"].pop("elapsed_s", None)
    assert a == b
    assert {f["id"] for f in a["findings"]} >= {"nan-rank-local", "cuda-oom"}
    said = two.stderr.decode()
    assert "read in 2 pieces" in said and "by this process and 1 worker process(es)" in said, said


def test_dask_local_cluster_reads_one_file_in_pieces(tiny):
    pytest.importorskip("distributed")
    logs = [SAMPLES / "multinode" / "stall_timeout.log", SAMPLES / "hf" / "trainer_ddp_nan.log"]
    expected = _report(logs, jobs=1)
    notes: list = []
    got = _report(logs, jobs=2, engine="dask", note=notes.append)
    assert got == expected
    assert len(notes) == 2 and all("as Dask tasks" in n for n in notes)
