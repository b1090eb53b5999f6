"""Who failed first in multi-rank logs, blind public rounds 4246- (session 18, ranks3): milabench's terminal prefix
`<bench>.N [stderr] ` and its error report (milabench/validation/error.py: a traceback's lines under `      | `, an
exception counted `* N x `), Open MPI's `MPI_ABORT was invoked on rank N`, torchrun's Failures table cut before its
Root Cause, watchdog time-outs with no culprit in the text, accelerate's test tee `stderr: ` (test_utils/testing.py
_stream_subprocess: print(label, line)); a DDP warning of a working run, Ray Train's `(RayTrainWorker pid=P, ip=...)
[rank7]:` deprecation warning and one per process without a prefix as healthy traps.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ids
from nanscope import api
from nanscope.ingest.prefixes import peel
from nanscope.model import Origin

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


# round 1 (4246-4256), scored blind before any change
@pytest.mark.parametrize("name, expected, rank", [
    ("4246.log", "uncaught-exception", 0),  # only rank 0's output is shown (rank not labelled)
    ("4248.log", "uncaught-exception", 0),  # the agent's `local_rank: 0` under `* 1 x ` (rank not labelled)
    ("4249.log", "rank-crash-cascade", 1),  # MPI_ABORT was invoked on rank 1
    ("4250.log", "worker-terminated", None),  # four SIGABRT entries, the Root Cause cut off
    ("4251.log", "collective-timeout", None),
    ("4252.log", "collective-timeout", None),
    ("4253.log", "uncaught-exception", None),  # the Failures entries under `stderr: `, the Root Cause cut off
])
def test_round_1_first_failure_and_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["4254.log", "4255.log", "4256.log"])
def test_round_1_healthy_runs_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_launcher_banner_alone_is_not_guessed() -> None:
    # 4247 (known gap): ChildFailedError with <NO_OTHER_FAILURES>, cut before the Root Cause entry
    assert ids(api.diagnose([str(PUBLIC / "4247.log")])) == []


@pytest.mark.parametrize("line, msg", [
    # mila-iqia/milabench#337 (validation/error.py: summary.add(f"      | {line}") one section deep)
    ("        | torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
     "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"),
    ("        |   <NO_OTHER_FAILURES>", "  <NO_OTHER_FAILURES>"),
    # mila-iqia/milabench#260 (summary.add(f"  * {len(exceptions)} x {k}"))
    ("    * 1 x E0830 13:11:52.056000 139927571765056 torch/distributed/elastic/multiprocessing/api.py:833] failed "
     "(exitcode: 1) local_rank: 0 (pid: 2686305) of binary: /tmp/workspace/cuda/results/venv/torch/bin/python",
     "E0830 13:11:52.056000 139927571765056 torch/distributed/elastic/multiprocessing/api.py:833] failed "
     "(exitcode: 1) local_rank: 0 (pid: 2686305) of binary: /tmp/workspace/cuda/results/venv/torch/bin/python"),
    # hiyouga/LlamaFactory#701 (accelerate test_utils/testing.py: print("stderr:", line))
    ("stderr:   rank      : 1 (local_rank: 1)", "  rank      : 1 (local_rank: 1)"),
    ("stderr: Failures:", "Failures:"),
])
def test_report_and_tee_wrappers_are_peeled_without_a_rank(line: str, msg: str) -> None:
    got, origin = peel(line, Origin())
    assert got == msg
    assert origin.rank is None and origin.node is None


def test_a_rank_prefix_inside_milabenchs_report_is_still_the_rank() -> None:
    # mila-iqia/milabench#260: the copied traceback keeps torch's `[rankN]:`
    msg, origin = peel("        | [rank7]: Traceback (most recent call last):", Origin())
    assert msg == "Traceback (most recent call last):"
    assert origin.rank == 7


@pytest.mark.parametrize("line", [
    "  | Name  | Type             | Params",  # Lightning's ModelSummary: a table, two spaces in
    "| epoch 001 | loss 6.1 | ppl 68.9",  # fairseq's progress line
    "** 3 x 3 conv",  # not a count of milabench's
])
def test_tables_are_not_milabench_reports(line: str) -> None:
    assert peel(line, Origin())[0] == line
