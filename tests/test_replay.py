"""The benchmark's replayed corpus (bench/replay.py: the real logs of sample_logs/, interleaved
across ranks under five launcher prefixes and played to any size) is diagnosed right: its
injected faults, their initiating ranks and first steps, and nothing else; the fast path and the
per-line path agree on it. Also: an exception a process survives keeps the step it was printed at.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from nanscope import api
from nanscope.ingest.reader import expand_sources
from nanscope.report import json as json_report

sys.path.insert(0, str(Path(ROOT) / "bench"))
import replay  # noqa: E402
import run as bench_run  # noqa: E402
from test_native import _diagnose  # noqa: E402

SIZE = 3 << 20


def _report(path: Path, jobs: int = 1) -> dict:
    r = json.loads(json_report.dumps(api.diagnose_sources(expand_sources([str(path)]), api.Options(jobs=jobs))))
    return r


@pytest.fixture(scope="module")
def console(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("replay") / "console.log"
    replay.write_console(str(p), SIZE)
    return p


def _problems(r: dict, tmp: Path) -> list[str]:
    out = tmp / "r.json"
    out.write_text(json.dumps(r))
    return bench_run.check_truth(str(out), replay.truth(SIZE), replay.allowed())


def test_replayed_console_log_names_its_faults_and_ranks(console, tmp_path):
    r = _report(console)
    assert _problems(r, tmp_path) == []
    top = {f["id"]: f for f in r["findings"]}
    assert top["nan-rank-local"]["initiating_rank"] == 2
    assert top["cuda-oom"]["initiating_rank"] == 11


def test_replayed_per_rank_files_name_the_same_faults(tmp_path):
    folder = tmp_path / "ranks"
    replay.write_per_rank(str(folder), SIZE)
    assert (folder / "rank_2.log").exists() and (folder / "rank_11.log").exists()
    for jobs in (1, 2):
        assert _problems(_report(folder, jobs), tmp_path) == [], jobs


def test_replayed_console_log_fast_path_gives_the_per_line_report(console):
    fast = _diagnose(expand_sources([str(console)]), native=True, batch=True, every_region=False)
    slow = _diagnose(expand_sources([str(console)]), native=False, batch=False)
    assert fast["findings"] == slow["findings"]
    assert fast["ranks"] == slow["ranks"]


def test_per_rank_files_learn_readers_on_their_first_rows_with_the_same_report(tmp_path, monkeypatch):
    """Each new input's first batch has no readers yet: they are learned on its first rows and read
    the rest in RE2 (Prefilter._warm). The report is the one without that step, and the per-line one."""
    from nanscope.ingest import reader

    folder = tmp_path / "ranks"
    replay.write_per_rank(str(folder), SIZE)
    calls: list = []
    real = reader.Prefilter._warm

    def counting(self, cand, rest, lane, found):
        out = real(self, cand, rest, lane, found)
        calls.append(len(rest) - len(out))
        return out

    monkeypatch.setattr(reader.Prefilter, "_warm", counting)
    monkeypatch.setattr(reader, "WARM_ROWS", 256)  # (these files are small: learn on fewer rows)
    warm = _diagnose(expand_sources([str(folder)]), native=True, batch=True)
    assert len(calls) >= 5 and sum(calls) > 20 * 256  # rows read in RE2 instead of one by one
    monkeypatch.setattr(reader, "WARM_ROWS", 1 << 40)
    cold = _diagnose(expand_sources([str(folder)]), native=True, batch=True)
    slow = _diagnose(expand_sources([str(folder)]), native=False, batch=False)
    assert warm == cold
    assert warm["findings"] == slow["findings"] and warm["ranks"] == slow["ranks"]


def _handled_log(path: Path, steps: int, at: int) -> None:
    """Rank 1's step lines of sample_logs/torch/ddp_crash_rank1.log played for `steps` steps,
    with that rank's real IndexError traceback printed after step `at`."""
    src = (Path(ROOT) / "sample_logs/torch/ddp_crash_rank1.log").read_text().split("\n")
    tb = [x for x in src if x.startswith("[default1]:[rank1]:")]
    body = [x for x in src if re.match(r"\[default1\]:step \d+ \|", x)][:20]
    out = []
    for i in range(steps):
        out.append(re.sub(r"step \d+", f"step {i}", body[i % len(body)], count=1))
        if i == at:
            out.extend(tb)
    path.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("native", [False, True])
def test_an_exception_the_process_survived_keeps_the_step_it_was_printed_at(tmp_path, native):
    log = tmp_path / "handled.log"
    _handled_log(log, 3000, 100)  # 2,900 steps after the traceback: the process went on
    r = _diagnose(expand_sources([str(log)]), native=native, batch=native, every_region=native)
    exc = [f for f in r["findings"] if f["id"] == "uncaught-exception"]
    assert exc and exc[0]["first_step"] == 101 and exc[0]["initiating_rank"] == 1


@pytest.mark.parametrize("native", [False, True])
def test_step_lines_flushed_after_a_traceback_still_move_its_step(tmp_path, native):
    log = tmp_path / "flushed.log"
    _handled_log(log, 130, 100)  # 29 buffered step lines after the traceback: the crash came after them
    r = _diagnose(expand_sources([str(log)]), native=native, batch=native, every_region=native)
    exc = [f for f in r["findings"] if f["id"] == "uncaught-exception"]
    assert exc and exc[0]["first_step"] == 130
