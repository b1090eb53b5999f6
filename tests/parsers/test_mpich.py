"""MPICH-family launchers (HPE Cray PALS, MPICH2 mpd, Hydra) -> events, and the rank a user reads.
Lines copied from the public threads named per case (sample_logs/public/MANIFEST.toml 2415-2419) and
from the launchers' own print statements (MPICH2 src/pm/mpd/mpiexec.py, Hydra ui/mpich/mpiexec.c)."""

from __future__ import annotations

from conftest import cli_report as _report
from nanscope import api
from nanscope.model import ErrorEvent, LifecycleEvent

# E3SM-Project/E3SM#6985 (2416.log): rank 84 only lost its peer; rank 96 segfaulted, rank 99 was stopped after it
POLARIS = """\
x3102c0s1b0n0.hsn.cm.polaris.alcf.anl.gov 84: Sat Mar  8 04:27:33 2025: [PE_84]:inet_recv:inet_recv: unexpected socket EOF on x3102c0s1b0n0.hsn.cm.polaris.alcf.anl.gov from x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: Success
Sat Mar  8 04:27:33 2025: [PE_84]:_pmi_network_allgather:_pmi_inet_recv from target 2 failed
Sat Mar  8 04:27:33 2025: [PE_84]:_pmi_allgather:_pmi_network_allgather failed
x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 96 died from signal 11 and dumped core
x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 99 died from signal 15
"""

# pmodels/mpich#981 (2419.log): mpd's report, one block per rank
MPD = """\
rank 3 in job 1958  bb36_58821   caused collective abort of all ranks
  exit status of rank 3: killed by signal 9 
rank 2 in job 1958  bb36_58821   caused collective abort of all ranks
  exit status of rank 2: killed by signal 11 
"""


def _events(tmp_path, text: str) -> list:
    p = tmp_path / "job.log"
    p.write_text(text, encoding="utf-8")
    return [e for e in api.events([str(p)]) if isinstance(e, (ErrorEvent, LifecycleEvent)) and e.framework == "mpich"]


def test_pals_first_fault_is_the_failure_and_the_sigterm_after_it_a_teardown(tmp_path):
    died, stopped = _events(tmp_path, POLARIS)
    assert (died.error, died.rank, died.signal) == ("worker_failed", 96, "SIGSEGV")
    assert died.fields["first_observed"] is True and died.fields["core_dumped"] is True
    assert died.fields["node"] == "x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov"
    assert (stopped.kind, stopped.action, stopped.rank) == ("lifecycle", "teardown", None)
    assert (stopped.fields["stopped_rank"], stopped.fields["signal"]) == (99, "SIGTERM")


def test_pals_report_names_the_segfaulted_rank(tmp_path):
    report = _report(tmp_path, POLARIS)
    ids = [f["id"] for f in report["findings"]]
    assert "worker-segfault" in ids
    assert {f["initiating_rank"] for f in report["findings"]} == {96}


def test_pals_line_without_the_host_and_a_kill_after_it(tmp_path):
    # saforem2/ezpz#210 (2415.log)
    report = _report(tmp_path, "rank 0 died from signal 11 and dumped core\nrank 4 died from signal 9\n")
    assert "worker-segfault" in [f["id"] for f in report["findings"]]
    # rank 4's SIGKILL came after the fault: the teardown, not an OOM kill of its own
    assert "process-killed" not in [f["id"] for f in report["findings"]]
    assert report["findings"][0]["initiating_rank"] == 0


def test_a_sigkill_before_any_fault_stays_a_failure_of_its_own(tmp_path):
    # pmodels/mpich#7605 wording, a kill alone: the OOM killer's kind of death, not a teardown
    (ev,) = _events(tmp_path, "x4417c3s5b0n0.hsn.cm.aurora.alcf.anl.gov: rank 48109 died from signal 9\n")
    assert (ev.kind, ev.error, ev.signal, ev.rank) == ("error", "worker_failed", "SIGKILL", 48109)
    assert ev.fields["first_observed"] is False


def test_pals_abort_first_is_a_cascade_from_that_rank(tmp_path):
    # pmodels/mpich#7605 (2418.log)
    report = _report(tmp_path, "x4213c4s7b0n0.hsn.cm.aurora.alcf.anl.gov: rank 27421 died from signal 6\n"
                               "x4417c3s5b0n0.hsn.cm.aurora.alcf.anl.gov: rank 48109 died from signal 15\n")
    assert [(f["id"], f["initiating_rank"]) for f in report["findings"]] == [("rank-crash-cascade", 27421)]


def test_mpd_blocks_pair_the_head_with_its_exit_status(tmp_path):
    # mpd lists the deaths in the order their reports reached it: rank 3's SIGKILL, printed before rank 2's
    # fault, is the teardown after it (it was a process-killed of its own before session 14)
    segv, killed = _events(tmp_path, MPD)
    assert (segv.rank, segv.signal, segv.fields["job"], segv.fields["first_observed"]) == (2, "SIGSEGV", "1958", True)
    assert (killed.kind, killed.action, killed.rank) == ("lifecycle", "teardown", None)
    assert (killed.fields["stopped_rank"], killed.fields["signal"], killed.fields["job"]) == (3, "SIGKILL", "1958")


def test_mpd_report_of_faults_after_a_kill_is_a_segfault(tmp_path):
    # pmodels/mpich#981 (2419.log): three ranks segfault; the SIGKILL listed first is no OOM kill
    report = _report(tmp_path, MPD + "rank 1 in job 1958  bb36_58821   caused collective abort of all ranks\n"
                                     "  exit status of rank 1: killed by signal 11 \n")
    ids = [f["id"] for f in report["findings"]]
    assert ids[0] == "worker-segfault" and "process-killed" not in ids


def test_mpd_return_code(tmp_path):
    # an Open MPI users-list quote of mpd's report (the MPICH2 print with `return code %d`)
    (ev,) = _events(tmp_path, "rank 0 in job 1  hydra127_34565   caused collective abort of all ranks\n"
                              "  exit status of rank 0: return code 1\n")
    assert (ev.error, ev.rank, ev.exitcode, ev.signal) == ("worker_failed", 0, 1, None)


def test_hydra_exit_string_names_the_signal_but_no_rank(tmp_path):
    # ggml-org/llama.cpp#4792 and Hydra's printf("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: %s (signal %d)")
    (ev,) = _events(tmp_path, "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)\n")
    assert (ev.error, ev.signal, ev.rank) == ("worker_failed", "SIGSEGV", None)
    (old,) = _events(tmp_path, "APPLICATION TERMINATED WITH THE EXIT STRING: Hangup (signal 1)\n")
    assert (old.signal, old.fields["signal_name"]) == ("SIGHUP", "Hangup")


def test_lookalikes(tmp_path):
    # other programs' words for a child's death, and prose
    text = ("html2lcov: 'diff' died from signal 15\n"
            "qlotto-run: child died from signal 11\n"
            "the rank 3 died from signal 9 issue is tracked elsewhere, see below\n"
            "exit status of rank 3: killed by signal 9\n")  # no mpd head before it
    assert _events(tmp_path, text) == []


def test_hydra_banner_exit_code_is_the_signal(tmp_path):
    # IntelligentSoftwareSystems/Galois#37 (2423.log): 139 = 128 + SIGSEGV, a shell between reported it
    (ev,) = _events(tmp_path, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                              "=   PID 4774 RUNNING AT IIPLab-WS1\n"
                              "=   EXIT CODE: 139\n"
                              "=   CLEANING UP REMAINING PROCESSES\n")
    assert (ev.error, ev.signal, ev.rank, ev.fields["node"], ev.fields["pid"]) == ("worker_failed", "SIGSEGV", None, "IIPLab-WS1", 4774)


def test_hydra_banner_and_its_exit_string_are_one_event(tmp_path):
    # openai/jukebox#155 (2424.log): EXIT CODE 9, then mpiexec's own `Killed (signal 9)`
    evs = _events(tmp_path, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                            "=   PID 9665 RUNNING AT NeuroRTX6000\n"
                            "=   EXIT CODE: 9\n"
                            "=   CLEANING UP REMAINING PROCESSES\n"
                            "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
                            "===================================================================================\n"
                            "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")
    assert [(e.error, e.signal) for e in evs] == [("worker_failed", "SIGKILL")]


def test_hydra_banner_with_the_rank(tmp_path):
    # the Intel MPI / MPICH 4 banner: `=   RANK 1 PID 27494 RUNNING AT node1` / `=   KILLED BY SIGNAL: 11 (Segmentation fault)`
    # (verbatim from an HPC site's public FAQ page of MPI errors, in the search index)
    report = _report(tmp_path, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                               "=   RANK 1 PID 27494 RUNNING AT node1\n"
                               "=   KILLED BY SIGNAL: 11 (Segmentation fault)\n")
    assert [(f["id"], f["initiating_rank"]) for f in report["findings"]][:1] == [("worker-segfault", 1)]


def test_hydra_exit_code_of_the_program_itself(tmp_path):
    (ev,) = _events(tmp_path, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
                              "=   PID 1 RUNNING AT host\n"
                              "=   EXIT CODE: 1\n")
    assert (ev.exitcode, ev.signal) == (1, None)


def test_an_exit_code_line_without_the_banner_is_nothing(tmp_path):
    assert _events(tmp_path, "=   EXIT CODE: 9\n=   PID 9665 RUNNING AT NeuroRTX6000\n") == []
