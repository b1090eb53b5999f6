"""Distributed and launcher failures users posted (sample_logs/public/2900-2999, session 13): Open MPI's own
fault report in a process mpirun started (the rank from mpirun's `[1,N]<stderr>:` tag), Open MPI's TCP
transport losing a peer, torchrun's agent sent SIGHUP (its SignalException), Horovod's stall check. What a
user reads first, which rank it names, that the generic finding is gone, and that the healthy traps (a lone
stall warning, destroy_process_group warnings at exit) stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from tests.conftest import diagnose_lines, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _report(name: str):
    return api.diagnose([str(PUBLIC / name)])


@pytest.mark.parametrize("name, expected", [
    ("2914.log", "worker-segfault"),       # opal's handler in nccl-tests, ncclTopoCompute (nccl#1363)
    ("2919.log", "worker-segfault"),       # the same under horovodrun's [1,2]<stderr> tag (horovod#1197)
    ("2922.log", "worker-segfault"),       # Horovod's background thread after 20 h (horovod#585)
    ("2904.log", "peer-connection-lost"),  # help-mpi-btl-tcp.txt [peer hung up] (horovod#1950)
    ("2910.log", "external-signal"),       # SignalException: Process N got signal: 1 (RRHF#35)
    ("2909.log", "external-signal"),       # Received 1 death signal (ms-swift#64)
    ("2900.log", "collective-timeout"),    # stall check, one tensor a line with its ready ranks (horovod#364)
    ("2918.log", "uncaught-exception"),    # ChildFailedError's Root Cause with its traceback (pytorch#73465)
    # round 2 (2930-2943), after the round-1 fixes
    ("2930.log", "external-signal"),       # SignalException alone (FlagEmbedding#695)
    ("2932.log", "worker-segfault"),       # opal's Signal line without its head (bluefog#11)
    ("2933.log", "worker-segfault"),       # opal's report, then mpiexec's line about the same PID (glow#18)
    ("2936.log", "collective-timeout"),    # v0.15 tensor lines, no head (horovod#1012)
    ("2937.log", "collective-timeout"),    # 0.18's 'Stalled ranks:' with the head wrapped (horovod#1442)
    ("2939.log", "collective-timeout"),    # 0.28's 'Missing ranks:' under a '[0] ' prefix (horovod#3950)
    ("2943.log", "collective-timeout"),    # ready-ranks tensor lines pasted alone (horovod#530)
    ("2940.log", "process-killed"),        # mp.spawn: process 0 terminated with signal SIGKILL (Prompt4NR#3)
    ("2941.log", "worker-segfault"),       # CalledProcessError ... died with <Signals.SIGSEGV: 11> (pytorch#61839)
])
def test_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]


@pytest.mark.parametrize("name, rank", [
    ("2919.log", 2),    # mpirun's tag on opal's report
    ("2918.log", 304),  # torchrun's table: rank 304 (local_rank 0)
    ("2920.log", 5),    # mpirun noticed that process rank 5 ... exited on signal 11
    ("2903.log", 7),    # mpirun noticed that process rank 7 ... exited on signal 9
    ("2933.log", 0),    # opal's report has no rank; mpiexec names PID 19474 rank 0
    ("2936.log", 1),    # [missing ranks: 1] on every tensor
    ("2937.log", 6),    # 'Stalled ranks:' then rank 6's line behind mpirun's [1,0] tag
])
def test_the_rank_that_started_it(name, rank):
    report = _report(name)
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["2910.log", "2930.log", "2940.log", "2941.log"])
def test_a_launcher_signal_report_is_not_an_uncaught_exception(name):
    assert "uncaught-exception" not in ids(_report(name))


def test_two_ranks_missing_name_no_culprit():
    # horovod/horovod#3950: ranks 0 and 1 both listed under 'Missing ranks:'
    report = _report("2939.log")
    assert ids(report)[:1] == ["collective-timeout"]
    assert report.findings[0].initiating_rank is None


def test_a_held_open_mpi_report_does_not_swallow_a_stall(tmp_path):
    # a stall listing after an untagged opal report: the stall's tensor lines update the stall, not the fault
    report = diagnose_lines(tmp_path, [
        "[lhx-910:19474] Signal: Segmentation fault (11)",
        "[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_bias_Momentum_0 [missing ranks: 1]",
    ])
    assert ids(report)[:1] == ["worker-segfault"]
    assert [c.id for c in report.findings[0].collateral] == ["collective-timeout"]


def test_a_peer_the_tcp_transport_lost_names_no_rank_and_says_its_host():
    finding = _report("2904.log").findings[0]
    assert finding.initiating_rank is None
    assert any("reco-zl-c4-reco316" in (ev.message or "") for m in finding.matches for ev in m.events)


@pytest.mark.parametrize("name", ["2901.log", "2911.log", "2912.log", "2913.log", "2942.log"])
def test_healthy_traps_stay_quiet(name):
    # a lone Horovod stall warning the run got past (horovod#2843); PyTorch's exit warnings about
    # destroy_process_group on every rank, behind a collector's timestamp, after vLLM generations; the
    # /proc/mounts warning in a container (DockerMonitor#5)
    assert ids(_report(name)) == []


def test_an_abort_reported_by_open_mpi_is_not_a_memory_fault(tmp_path):
    # opal's handler after abort(): the cause is the C++ exception printed before it
    report = diagnose_lines(tmp_path, [
        "[fv-az99-305:40271] *** Process received signal ***",
        "[fv-az99-305:40271] Signal: Aborted (6)",
        "[fv-az99-305:40271] Signal code:  (-6)",
    ])
    assert "worker-segfault" not in ids(report)


def test_a_stall_warning_that_repeats_is_a_timeout(tmp_path):
    # horovod/horovod#2564's stall_inspector.cc wording, the check firing twice with nothing in between
    line = ("[2020-12-30 16:35:15.181832: W /tmp/pip-req-build-12flcl_u/horovod/common/stall_inspector.cc:105] "
            "One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are "
            "waiting for remainder of ranks for more than 60 seconds. This may indicate that different ranks are "
            "trying to submit different tensors or that only subset of ranks is submitting tensors, which will cause "
            "deadlock.")
    assert ids(diagnose_lines(tmp_path, [line])) == []
    assert ids(diagnose_lines(tmp_path, [line, line])) == ["collective-timeout"]


def test_a_stall_warning_that_lists_missing_ranks_is_a_timeout(tmp_path):
    # horovod/horovod#2564: v0.18+'s `Missing ranks:` header, then a line per rank
    report = diagnose_lines(tmp_path, [
        "[2020-12-30 16:35:15.181832: W /tmp/pip-req-build-12flcl_u/horovod/common/stall_inspector.cc:105] One or "
        "more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
        "remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
        "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.",
        "Missing ranks:",
    ])
    assert ids(report) == ["collective-timeout"]


def test_the_function_entrypoint_teardown_is_no_failure_alone(tmp_path):
    # MultiprocessContext._close's wording (nvidia-resiliency-ext#18): the agent stopping workers, no cause
    report = diagnose_lines(tmp_path, [
        "W0227 17:39:41.936000 293814 site-packages/torch/distributed/elastic/multiprocessing/api.py:766] "
        "Closing process 293866 via signal SIGTERM",
    ])
    assert ids(report) == []
