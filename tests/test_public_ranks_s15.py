"""Who failed first in multi-rank logs, blind public rounds 3900- (session 15): a device-side assert behind
`[rank6]: `, a watchdog under srun's label, accelerate's agent naming a local rank, watchdog time-outs (no
culprit), torchrun's Root Cause table above srun's per-node `task 0` (the task is node 0's torchrun agent, not
rank 0), the c10d store read of rank 0's ncclUniqueId reset by its peer (the store is rank 0's: it went away),
a torchrun table whose entries all exit alike in the same second (its Root Cause is a tie, not evidence),
FSDP OOMs behind a rank prefix; every-rank warnings and ProcessGroupNCCL's INFO block as healthy traps.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected, rank", [
    ("3900.log", "cuda-device-assert", 6),  # IndexKernel assert, then '[rank6]: Traceback' and rank 6's watchdog
    ("3901.log", "cuda-illegal-memory-access", None),  # 'unspecified launch failure' under srun's '7: '
    ("3902.log", "rank-crash-cascade", 2),  # accelerate's agent: local_rank 2 failed (exitcode: 1)
    ("3903.log", "collective-timeout", None),  # ranks 2, 3 waiting in one _ALLGATHER_BASE
    ("3904.log", "collective-timeout", None),
    # round 6 (3910-3915), scored blind after round 5
    ("3910.log", "worker-terminated", None),  # rank 10's lone SIGABRT; srun's task 0 is node 0's agent
    ("3911.log", "peer-connection-lost", 0),  # rank 14's store read reset: the store's host, rank 0, went away
    ("3912.log", "uncaught-exception", None),  # every entry exit 1 in the same second: no first rank
    ("3913.log", "cuda-oom", 5),
    ("3914.log", "cuda-oom", 0),
])
def test_the_first_failure_and_its_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["3905.log", "3906.log", "3915.log"])
def test_healthy_runs_of_the_rounds_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_srun_task_under_torchrun_is_no_rank() -> None:
    # huggingface/accelerate#2960: the agent's table names rank 10; srun's 'task 0' that follows is the agent
    report = api.diagnose([str(PUBLIC / "3910.log")])
    assert "uncaught-exception" not in ids(report)
    assert all(f.initiating_rank != 0 for f in report.findings)


def test_srun_task_alone_is_still_its_rank(tmp_path) -> None:
    # without a torchrun agent's record, srun's task number is SLURM_PROCID, the rank srun started
    log = tmp_path / "job.log"
    log.write_text("srun: error: node17: task 3: Exited with exit code 1\n"
                   "srun: error: node17: tasks 0-2,4-7: Killed\n", encoding="utf-8")
    report = api.diagnose([str(log)])
    assert report.findings and report.findings[0].initiating_rank == 3


def test_a_table_with_a_root_cause_of_its_own_keeps_it(tmp_path) -> None:
    # the tie rule needs every entry alike: an error file (or another second) makes the Root Cause evidence
    log = tmp_path / "job.log"
    log.write_text(
        "Failures:\n"
        "[1]:\n"
        "  time      : 2024-04-01_05:16:52\n"
        "  host      : n1\n"
        "  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : 1 (pid: 11)\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2024-04-01_05:16:50\n"
        "  host      : n1\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 1 (pid: 10)\n"
        "  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n",
        encoding="utf-8")
    report = api.diagnose([str(log)])
    assert report.findings
    assert "torchrun's summary lists ranks" not in (report.findings[0].decided_by or "")
