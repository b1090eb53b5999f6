"""Who failed first in multi-rank logs, blind public rounds 4200- (session 16): watchdog time-outs under Ray's
`(WorkerDict pid=...)` with a sub-group's own rank after the global `[rank7]:`, under a collector's date stamp,
with a rank's c10 record glued to a tqdm bar (`... 5727.61s/it][rank0]:[E1202 ...`); torchrun's c10d
rendezvous client socket timing out; an OOM behind `[rank2]: `; a finished nccl-tests run and 32 ranks'
`Init COMPLETE` as healthy traps.

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


@pytest.mark.parametrize("name, expected, rank", [
    ("4200.log", "collective-timeout", None),  # global rank 7 is rank 1 of mesh_sp: the waiting rank, no culprit
    ("4201.log", "collective-timeout", None),  # the dump signal `from  rank 4`; rank 7's own EP-group watchdog
    ("4202.log", "peer-connection-lost", None),  # the agent's client socket never reached the c10d store
    ("4203.log", "collective-timeout", None),
    ("4204.log", "collective-timeout", None),
    ("4205.log", "collective-timeout", None),
    ("4208.log", "cuda-oom", 2),
    ("4209.log", "collective-timeout", None),
    # round 8 (4210-4215), scored blind after round 7's fix
    ("4210.log", "collective-timeout", None),  # rank 1 only observed rank 3's dump signal: no error of its own
    ("4211.log", "collective-timeout", None),
    ("4212.log", "collective-timeout", None),
    ("4213.log", "collective-timeout", None),  # `what():  [Rank 6] NCCL watchdog thread terminated`, no prefix
    ("4214.log", "collective-timeout", None),  # an NCCL RAS report with no error beside rank 118's time-out
])
def test_the_first_failure_and_its_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["4206.log", "4207.log", "4215.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


@pytest.mark.parametrize("name, ranks", [("4210.log", [3]), ("4213.log", [6]), ("4214.log", [118])])
def test_the_ranks_that_waited_are_the_ones_named(name: str, ranks: list) -> None:
    f = api.diagnose([str(PUBLIC / name)]).findings[0]
    assert f.ranks == ranks and f.initiating_rank is None


def test_a_sub_groups_rank_is_not_the_global_rank() -> None:
    # verl-project/verl#5414: `[rank7]:[E226 ...] [Rank 1] Watchdog caught ...` is global rank 7, rank 1 of mesh_sp
    f = api.diagnose([str(PUBLIC / "4200.log")]).findings[0]
    assert f.ranks == [7]


@pytest.mark.parametrize("name, ranks", [
    ("4203.log", [1, 7]),  # rank 1's record glued to `Epoch 0: ... [00:00<?, ?it/s]` (modelscope/DiffSynth-Studio#458)
    ("4209.log", [0, 1, 2, 3]),  # rank 0's glued to `... 6/15000 [10:46:01<23855:30:25, 5727.61s/it]` (ms-swift#6877)
])
def test_a_record_glued_to_a_tqdm_bar_is_its_ranks(name: str, ranks: list) -> None:
    f = api.diagnose([str(PUBLIC / name)]).findings[0]
    assert f.ranks == ranks
    # every rank that timed out is in the input: none is 'never seen' (4209 named rank 0 so before)
    assert "never appears in the input" not in (f.decided_by or "")


def test_a_glued_record_takes_the_prefix_rank_not_the_groups(tmp_path) -> None:
    # the c10 header after `[rank3]:` opens a record whatever came before it on the line; `[Rank 1]` in the
    # message is the process group's own rank (fields['pg_rank'])
    line = ("hello [rank3]:[E318 07:39:53.713449198 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=610, OpType=COALESCED, NumelIn=56320, NumelOut=450560, "
            "Timeout(ms)=600000) ran for 600007 milliseconds before timing out.")
    msg, origin = peel(line, Origin())
    assert origin.rank == 3 and msg.startswith("[E318 07:39:53")
    log = tmp_path / "job.log"
    log.write_text(line + "\n", encoding="utf-8")
    assert api.diagnose([str(log)]).findings[0].ranks == [3]


@pytest.mark.parametrize("line", [
    "see [rank3]: for details",  # a rank prefix without c10's header is prose
    "Epoch 0: 100%|##########| 5/5 [00:01<00:00, 4.1it/s][rank0] done",  # no colon: a user's tag, not torch's
    "copied [rank1]:[E1206 is not a header] here",
])
def test_no_glued_record_without_c10s_header(line: str) -> None:
    msg, origin = peel(line, Origin())
    assert msg == line and origin.rank is None


# round 9 (4216-4221), scored blind after round 7's fix
@pytest.mark.parametrize("name, expected, rank", [
    ("4216.log", "collective-timeout", None),  # ranks 0,1,3 wait; rank 2 unseen is a hint, not a claim
    ("4217.log", "collective-timeout", None),
    ("4218.log", "cuda-device-assert", None),  # NCCL's `[1]` is a CUDA device index, not a rank
    ("4219.log", "cuda-device-assert", 1),  # rank 1's watchdog died on its own process's device-side assert
    ("4220.log", "worker-terminated", None),  # a lone SIGABRT: the watchdog's or a native abort
    ("4221.log", "process-killed", 1),  # SIGKILL, the others stopped by the agent after it
])
def test_round_9_first_failure_and_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


def test_the_agents_first_failure_after_it_stopped_the_others_is_a_lone_abort() -> None:
    # deepspeedai/Megatron-DeepSpeed#207: seven `Sending process P closing signal SIGTERM`, then `failed
    # (exitcode: -6) local_rank: 0`: PContext._poll stops the workers still running, then logs the first failure
    f = api.diagnose([str(PUBLIC / "4220.log")]).findings[0]
    assert f.initiating_rank is None
    assert "rank 0 is the worker torchrun saw fail, by SIGABRT, while the 7 other(s)" in f.decided_by
    assert "device-side assert" in f.decided_by


_STOPPED = ("W0811 10:33:49.342481 140 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 101 "
            "closing signal SIGTERM\n"
            "W0811 10:33:49.342605 140 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 102 "
            "closing signal SIGTERM\n")


def test_a_watchdog_line_keeps_the_abort_unexplained(tmp_path) -> None:
    # with a collective timeout in the input the abort is as likely the watchdog's after a stall elsewhere
    log = tmp_path / "job.log"
    log.write_text(
        "[rank1]:[E1006 15:30:19.943734533 ProcessGroupNCCL.cpp:655] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600042 "
        "milliseconds before timing out.\n" + _STOPPED +
        "E0811 10:34:02.121527 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -6) "
        "local_rank: 0 (pid: 100) of binary: /usr/bin/python\n", encoding="utf-8")
    report = api.diagnose([str(log)])
    assert all("torchrun saw fail" not in (f.decided_by or "") for f in report.findings)


def test_a_stopped_worker_is_not_the_agents_own_failure(tmp_path) -> None:
    # the failure line names a pid the agent itself just sent SIGTERM: no claim that the others were still running
    log = tmp_path / "job.log"
    log.write_text(_STOPPED + "E0811 10:34:02.121527 140 torch/distributed/elastic/multiprocessing/api.py:833] failed "
                   "(exitcode: -6) local_rank: 1 (pid: 101) of binary: /usr/bin/python\n", encoding="utf-8")
    report = api.diagnose([str(log)])
    assert all("torchrun saw fail" not in (f.decided_by or "") for f in report.findings)


# round 10 (4222-4224), scored blind after round 9's fix
@pytest.mark.parametrize("name, expected, rank", [
    ("4222.log", "worker-segfault", 2),  # the agent stopped seven, then logged local_rank 2's -11
    ("4223.log", "worker-segfault", 0),  # PALS: `rank 0 exited with code 139` (128 + SIGSEGV), rank 1 SIGTERM after
    ("4224.log", "remote-launch-failed", None),  # pdsh names a host, not a rank
])
def test_round_10_first_failure_and_rank(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


def test_pals_exit_status_names_the_rank_and_the_signal_teardown_is_collateral() -> None:
    report = api.diagnose([str(PUBLIC / "4223.log")])
    cascade = next(f for f in report.findings if f.id == "rank-crash-cascade")
    assert cascade.initiating_rank == 0 and cascade.collateral_ranks == [1]


@pytest.mark.parametrize("line, rank, exitcode, signal", [
    ("x1000c0s0b0n0: rank 3 exited with code 1", 3, 1, None),  # the program's own status
    ("rank 5 exited with code 134", 5, None, "SIGABRT"),  # 128 + 6 through a shell, host prefix off
])
def test_pals_exit_status_lines(tmp_path, line: str, rank: int, exitcode, signal) -> None:
    log = tmp_path / "job.log"
    log.write_text(line + "\n", encoding="utf-8")
    evs = [e for e in api.events([str(log)]) if e.kind == "error"]
    assert len(evs) == 1 and evs[0].rank == rank
    assert evs[0].exitcode == exitcode and evs[0].signal == signal


def test_a_clean_pals_exit_is_no_failure(tmp_path) -> None:
    log = tmp_path / "job.log"
    log.write_text("x1000c0s0b0n0: rank 0 exited with code 0\n", encoding="utf-8")
    assert ids(api.diagnose([str(log)])) == []
