"""Cross-rank reasoning on real logs (sample_logs/public, threads named in its MANIFEST.toml): which
evidence decided the initiating rank, with what confidence, and where the log cannot tell."""

from __future__ import annotations

import json

from conftest import SAMPLES, run_cli

PUBLIC = SAMPLES / "public"


def _findings(name: str) -> list:
    p = run_cli("diagnose", str(PUBLIC / name), "--format", "json", "--exit-zero")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["findings"]


def _top(name: str) -> dict:
    return _findings(name)[0]


def test_torchrun_summary_with_no_other_failures_names_the_only_failed_worker():
    # hiyouga/LlamaFactory#6040: only torchrun's ChildFailedError block, rank 1 exit 1, <NO_OTHER_FAILURES>
    top = _top("220.log")
    assert (top["id"], top["initiating_rank"]) == ("uncaught-exception", 1)
    assert "the only worker that failed" in top["decided_by"]


def test_mpirun_exit_on_signal_names_the_killed_rank():
    # horovod/horovod#469: 8 Keras ranks, mpirun notes rank 7 exited on signal 9
    # the death with its cause first, then the cascade it started (the launcher stopped the others)
    found = [(f["id"], f["initiating_rank"]) for f in _findings("800.log")]
    assert found == [("process-killed", 7), ("rank-crash-cascade", 7)]


def test_every_worker_dead_of_one_signal_in_one_second_makes_the_root_cause_arbitrary():
    # huggingface/picotron_tutorial#6: ranks 7 and 0 SIGABRT at 11:12:35, no error file, Root Cause rank 0
    (top,) = _findings("802.log")
    assert top["id"] == "launcher-misleading-root-cause"
    assert top["initiating_rank"] is None and top["confidence"] == "low"
    assert "died of SIGABRT at 2025-05-01 11:12:35" in top["decided_by"]
    assert "not evidence of who failed first" in top["decided_by"]
    assert [c["id"] for c in top["collateral"]] == ["worker-terminated"]


def test_different_exit_times_keep_the_launchers_order_as_a_hint_only():
    # the framework-run 2-node job: node 1's agent saw rank 3 exit 1 at :20 and rank 2 SIGTERM at :21;
    # its Root Cause is not arbitrary (different signals and seconds), and rank 3 is the culprit
    p = run_cli("diagnose", str(SAMPLES / "faults" / "multinode_crash" / "node1.log"), "--format", "json", "--exit-zero")
    top = json.loads(p.stdout)["findings"][0]
    assert top["initiating_rank"] == 3
    assert "order in which the agent noticed" not in json.dumps(json.loads(p.stdout))


def test_a_segfault_exit_is_the_primary_and_the_sigtermed_workers_its_collateral():
    # NVlabs/nvdiffrecmc#21: the agent SIGTERMs two workers after local_rank 1 exits -11
    found = _findings("803.log")
    assert [(f["id"], f["initiating_rank"]) for f in found] == [("worker-segfault", 1), ("rank-crash-cascade", 1)]
    assert "2 other worker(s) (stopped by the launcher)" in found[1]["decided_by"]


def test_a_sigabrt_after_the_ranks_own_watchdog_timeout_is_the_watchdogs_abort_not_a_culprit():
    # snap-research/discoscene#5: rank 7's watchdog timed out in a BROADCAST, then local_rank 7 exits -6
    found = _findings("804.log")
    assert found[0]["id"] == "collective-timeout"
    assert all(f["initiating_rank"] is None for f in found)


def test_a_lone_sigabrt_names_no_initiator_and_says_what_it_can_be():
    # NVIDIA/nccl#1439 ("ALLREDUCE timeout"): only rank 1, SIGABRT, <NO_OTHER_FAILURES>; the thread's
    # cause is a timed-out allreduce, so rank 1 must not be called the origin
    (f,) = _findings("805.log")
    assert (f["id"], f["initiating_rank"], f["confidence"]) == ("worker-terminated", None, "low")
    assert "either the NCCL watchdog after a collective timed out" in f["decided_by"]
    assert "native abort in rank 1" in f["decided_by"]


def test_a_thread_that_dies_is_a_hang_started_on_its_rank_not_a_crash():
    # framework-run: rank 2's prefetch thread raises at step 20, the process waits for it; 0,1,3 time out
    p = run_cli("diagnose", str(SAMPLES / "faults" / "ddp_thread_exception.log"), "--format", "json", "--exit-zero")
    found = json.loads(p.stdout)["findings"]
    assert [(f["id"], f["initiating_rank"]) for f in found][:2] == [("rank-crash-cascade", 2), ("thread-exception", 2)]
    assert "not a crash of rank 2 but a hang that started there" in found[0]["decided_by"]
    ids = {f["id"] for f in found} | {c["id"] for f in found for c in f["collateral"]}
    assert "uncaught-exception" not in ids
    assert "uncaught-exception" not in json.dumps([f.get("also_matched", []) for f in found])


def test_a_caught_exception_after_which_the_job_trains_on_is_no_finding():
    # framework-run healthy job: rank 1 prints a caught ValueError's traceback at step 20 and trains on
    p = run_cli("diagnose", str(SAMPLES / "faults" / "ddp_handled_exception.log"), "--format", "json")
    r = json.loads(p.stdout)
    assert p.returncode == 0 and r["verdict"] == "clean" and r["findings"] == []


def test_every_other_process_of_a_host_losing_one_local_rank_names_that_local_rank_only():
    # sgl-project/sglang#5013: devices 0-6 of A100-GPU-50 all see "Connection closed by localRank 7"
    (f,) = _findings("806.log")
    assert f["id"] == "nccl-local-peer-exited" and f["initiating_rank"] is None
    assert f["summary"] == "7 processes on A100-GPU-50 lost local rank 7 and no other: local rank 7 exited first."
    assert "not the global rank" in f["decided_by"]


def test_a_lost_local_peer_does_not_take_over_the_timeout_it_followed():
    # a 64-rank ZeRO-3 job whose rank 15 timed out and aborted: its host's peers lose local rank 7;
    # the timeout stays the first finding, the lost peer is reported beside it
    ids = [f["id"] for f in _findings("136.log")]
    assert ids[0] == "collective-timeout" and "nccl-local-peer-exited" in ids


def test_a_teardown_that_names_every_local_rank_is_no_lost_peer():
    # NVIDIA/nccl-tests#252: on kolyoz1 local ranks 2 and 3 are both named (an ordinary close);
    # on kolyoz2 the four processes all lose local rank 0, the one with the IB error
    found = _findings("412.log")
    lost = [f for f in found if f["id"] == "nccl-local-peer-exited"]
    assert len(lost) == 1 and lost[0]["summary"].startswith("4 processes on kolyoz2 lost local rank 0")


def test_nan_first_process_known_by_node_and_local_rank_only_is_named_without_a_global_rank():
    # sample_logs/multinode/srun_nan_one_rank.log (run here): `1: [default1]:` alone logs loss nan at
    # step 12; under a c10d rendezvous with no nproc_per_node no global rank can be composed
    p = run_cli("diagnose", str(SAMPLES / "multinode/srun_nan_one_rank.log"), "--format", "json", "--exit-zero")
    local = next(f for f in json.loads(p.stdout)["findings"] if f["id"] == "nan-rank-local")
    assert local["initiating_rank"] is None and local["first_step"] == 12
    assert local["summary"].startswith("The NaN started on node1 local rank 1:")
    assert "node0 local rank 0, node0 local rank 1, node1 local rank 0 were finite" in local["summary"]
    assert "no global rank is claimed" in local["decided_by"]


def test_timeouts_with_a_rank_missing_below_the_highest_hint_at_it_without_a_claim():
    # 429 (a DETR-style tracker): ranks 1, 2, 3 time out in ALLREDUCE SeqNum=86645 and rank 0 never
    # prints; the world size is not in the text, so rank 0 is a hint, not the initiating rank
    top = _top("429.log")
    assert (top["id"], top["initiating_rank"]) == ("collective-timeout", None)
    assert "rank 0 never appears in the input, though rank 3 does" in top["decided_by"]
    # 321: ranks 0, 1, 2 time out, none missing below rank 2: no hint
    assert "never appear" not in _top("321.log")["decided_by"]


def test_only_torn_down_workers_in_the_input_is_still_a_failed_job():
    # 1512 (open-mmlab/mmsegmentation#3106): every worker SIGABRT in the same second, no error file;
    # the one finding (worker-terminated) is low for those ranks, but the job died: exit 1, actionable
    p = run_cli("diagnose", str(PUBLIC / "1512.log"), "--format", "json")
    assert p.returncode == 1
    report = json.loads(p.stdout)
    assert report["verdict"] == "actionable" and report["findings"][0]["id"] == "worker-terminated"
