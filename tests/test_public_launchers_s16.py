"""Launchers, session 16: PaddlePaddle 2.3+'s launcher naming its pod's first failed container.

`Container rank 0 status failed cmd [...] code -6 log ...` (python/paddle/distributed/launch/job/container.py): the
code is the process's exit status, negative for a signal; the rank the container's index in the node's pod.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines on the launcher's
template, as the thread named in the comment printed them.
"""

from __future__ import annotations

from pathlib import Path

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"
HEAD = ["LAUNCH INFO 2022-10-25 15:17:31,067 Pod failed", "LAUNCH ERROR 2022-10-25 15:17:31,067 Container failed !!!"]


def test_a_container_that_aborted_is_named_with_its_rank() -> None:
    # 4610 (PaddlePaddle/Paddle#47326): code -6, SIGABRT; the launcher's lines are all the excerpt holds
    report = api.diagnose([str(PUBLIC / "4610.log")])
    assert ids(report) == ["worker-aborted"]
    assert report.findings[0].initiating_rank == 0
    assert "log/default.fpwuxo.0.log" in report.findings[0].evidence[0].text


def test_a_container_that_exited_with_status_1_is_its_uncaught_exception(tmp_path) -> None:
    r = diagnose_lines(tmp_path, HEAD + [
        "Container rank 3 status failed cmd ['/usr/bin/python3.8', '-u', 'train.py'] code 1 log log/workerlog.3",
    ])
    assert ids(r) == ["uncaught-exception"]
    assert r.findings[0].initiating_rank == 3


def test_the_workers_own_error_beside_the_launchers_report_is_the_finding(tmp_path) -> None:
    # the launcher's `ERROR LOG DETAIL` prints the container log's tail after its report
    r = diagnose_lines(tmp_path, HEAD + [
        "Container rank 0 status failed cmd ['/usr/bin/python3.8', '-u', 'train.py'] code -6 log log/workerlog.0",
        "LAUNCH INFO 2022-10-25 15:17:31,068 ------------------------- ERROR LOG DETAIL -------------------------",
        "Traceback (most recent call last):",
        '  File "train.py", line 12, in <module>',
        "    main()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ])
    assert "worker-aborted" not in ids(r)


def test_one_rank_aborting_before_the_others_were_killed_is_a_cascade() -> None:
    # 2418 (MPICH's hydra on Aurora): rank 27421 died from signal 6, rank 48109 from signal 15 after it
    report = api.diagnose([str(PUBLIC / "2418.log")])
    assert ids(report) == ["rank-crash-cascade"]
    assert report.findings[0].initiating_rank == 27421
