"""Open MPI / PRRTE launcher messages and Horovod's shutdown -> events, and what a user reads from
them. Lines copied from the public threads named per case (sample_logs/public/MANIFEST.toml) and
from the launcher's help templates (orte/tools/orterun/help-orterun.txt, prrte src/tools/prun/help-prun.txt)."""

from __future__ import annotations

from conftest import cli_report as _report
from nanscope import api
from nanscope.model import ErrorEvent, LifecycleEvent

# horovod/horovod#1421 (sample_logs/public/421.log)
FIRST_NONZERO = """\
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
-------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[29973,1],0]
  Exit code:    1
"""


def _events(tmp_path, text: str) -> list:
    p = tmp_path / "job.log"
    p.write_text(text, encoding="utf-8")
    return [e for e in api.events([str(p)]) if isinstance(e, (ErrorEvent, LifecycleEvent))]


def test_first_nonzero_exit_names_its_rank_and_the_job_teardown(tmp_path):
    teardown, failed = _events(tmp_path, FIRST_NONZERO)
    assert (teardown.kind, teardown.action, teardown.rank) == ("lifecycle", "teardown", None)
    assert (failed.error, failed.rank, failed.exitcode) == ("worker_failed", 0, 1)
    assert failed.fields["first_observed"] is True


def test_prrte_process_name_and_a_wrapped_head(tmp_path):
    # Open MPI 5 (prterun), from a public thread quoted in the index: `[prterun-host-pid@1,vpid]`
    text = ("prterun detected that one or more processes exited with non-zero status,\n"
            "thus causing the job to be terminated. The first process to do so was:\n\n"
            "   Process name: [prterun-ranma-147515@1,0]\n   Exit code:    6\n")
    [e] = _events(tmp_path, text)
    assert (e.rank, e.exitcode) == (0, 6)


def test_exit_on_signal_names_the_rank_and_the_signal(tmp_path):
    # horovod/horovod#469 (sample_logs/public/800.log)
    [e] = _events(tmp_path, "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9 (Killed).\n")
    assert (e.error, e.rank, e.signal) == ("worker_failed", 7, "SIGKILL")
    # the reporter masked PID and node (Kay1794/Aware-of-the-history#2, sample_logs/public/801.log)
    [e] = _events(tmp_path, "mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).\n")
    assert (e.rank, e.signal) == (1, "SIGKILL")


def test_launcher_first_exit_is_the_initiator_at_medium_confidence(tmp_path):
    r = _report(tmp_path, FIRST_NONZERO)
    top = r["findings"][0]
    assert (top["id"], top["initiating_rank"], top["confidence"]) == ("rank-crash-cascade", 0, "medium")
    assert "the launcher saw rank 0 exit first" in top["decided_by"]


def test_horovod_shutdown_is_a_lost_peer_and_no_rank_is_claimed(tmp_path):
    # horovod/horovod#3412 (sample_logs/public/422.log): rank 0's collective fails because another
    # rank went away; the launcher says one process failed but not which
    text = ("[1,0]<stderr>:Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt "
            "to allreduce, allgather or broadcast a tensor after one of the ranks finished execution. If the shutdown was "
            "caused by an exception, you should see the exception in the log before the first shutdown message.\n"
            "-------------------------------------------------------\n"
            "Primary job  terminated normally, but 1 process returned\n"
            "a non-zero exit code. Per user-direction, the job has been aborted.\n")
    r = _report(tmp_path, text)
    top = r["findings"][0]
    assert top["id"] == "rank-crash-cascade" and top["initiating_rank"] is None
    assert top["confidence"] == "low" and top["decided_by"].startswith("tier 4: the launcher says one process failed")
    assert top["summary"].startswith("A process failed first")
    assert [c["id"] for c in top["collateral"]] == ["peer-connection-lost"]


def test_sagemakers_mpirun_tag_names_the_rank_and_host():
    # huggingface/accelerate threads on SageMaker: `[1,mpirank:N,HOST]<stdout>:` in front of each line
    from nanscope.ingest.prefixes import peel
    from nanscope.model import Origin

    line = "[1,mpirank:3,algo-1]<stderr>:INFO:root:Reducer buckets have been rebuilt in this iteration."
    msg, origin = peel(line, Origin())
    assert (msg, origin.rank) == ("INFO:root:Reducer buckets have been rebuilt in this iteration.", 3)
    msg, origin = peel("[1,mpirank:0,algo-1]<stdout>:algo-1:79:1300 [0] NCCL INFO Launch mode Parallel", Origin())
    assert origin.rank == 0 and msg.startswith("algo-1:79:1300 [0] NCCL INFO")
