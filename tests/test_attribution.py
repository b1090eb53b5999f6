"""Cross-rank attribution on real multi-rank logs: the initiating rank, the collateral ranks,
and the grouping a user reads in the text and JSON reports."""

from __future__ import annotations

import json

from conftest import run_cli


def _report(path: str) -> dict:
    p = run_cli("diagnose", path, "--format", "json", "--exit-zero")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_crash_names_the_first_failing_rank_and_groups_the_victims():
    r = _report("sample_logs/torch/ddp_crash_rank1.log")
    top = r["findings"][0]
    assert (top["id"], top["initiating_rank"]) == ("rank-crash-cascade", 1)
    assert top["collateral_ranks"] == [0, 2, 3]
    grouped = {c["id"]: c["ranks"] for c in top["collateral"]}
    assert grouped["peer-connection-lost"] == [0, 2]
    assert "worker-terminated" in grouped
    assert [f["id"] for f in r["findings"]] == ["rank-crash-cascade"]  # victims are not peers


def test_hang_names_the_silent_rank_and_corrects_torchrun():
    r = _report("sample_logs/torch/ddp_hang_rank3.log")
    by_id = {f["id"]: f for f in r["findings"]}
    assert by_id["collective-timeout"]["initiating_rank"] == 3
    assert by_id["collective-timeout"]["decided_by"].startswith("tier 3")
    assert by_id["collective-timeout"]["collateral_ranks"] == [0, 1, 2]
    blame = by_id["launcher-misleading-root-cause"]
    assert blame["initiating_rank"] == 3 and "torchrun named rank" in blame["decided_by"]


def test_host_oom_is_the_root_and_the_cascade_is_reported():
    r = _report("sample_logs/torch/ddp_host_oom_rank1.log")
    top = r["findings"][0]
    assert (top["id"], top["initiating_rank"]) == ("host-oom", 1)
    assert {c["id"] for c in top["collateral"]} >= {"peer-connection-lost"}
    assert "rank-crash-cascade" in [f["id"] for f in r["findings"]]


def test_text_report_shows_root_then_collateral():
    out = run_cli("diagnose", "sample_logs/torch/ddp_crash_rank1.log", "--color", "never").stdout.decode()
    assert "initiating rank 1" in out
    assert "rank 1: rank-crash-cascade at step 30 -> ranks 0,2: " in out
    assert "(peer-connection-lost, collateral)" in out


def test_no_rank_is_named_without_evidence():
    # Every rank NaN at the same step: the log cannot tell who started it.
    log = b"".join(f"[default{r}]:step=40, loss=nan, grad_norm=nan, lr=0.001\n".encode() for r in range(4)) * 1
    log += b"".join(f"[default{r}]:step={s}, loss=nan, grad_norm=nan, lr=0.001\n".encode() for s in (41, 42) for r in range(4))
    r = json.loads(run_cli("diagnose", "-", "--format", "json", stdin=log).stdout)
    f = next(f for f in r["findings"] if f["id"] == "nan-persistent")
    assert f["initiating_rank"] is None
    assert "cannot tell" in f["decided_by"]


def test_a_root_without_a_rank_says_so_in_words():
    """A first primary error from a process that prints no rank (a single vLLM server; a Slurm
    line in a multi-rank job) is explained in words, never as "rank None"."""
    one = _report("sample_logs/vllm_excerpts/metrics_kv_pressure_v1.log")
    (f,) = one["findings"]
    assert f["initiating_rank"] is None
    assert f["decided_by"] == "one process: the input has no rank prefixes (the first primary error: vllm-preemption-pressure)"
    # count_within counted three stats lines with a full cache and a queue: the summary says 3
    assert f["summary"].startswith("KV cache pressure: 3 preemption(s) or stats line(s)")
    # slurmstepd's line names no task, but srun's record of the same kill does (task 4, the only rank in the input)
    slurm = _report("sample_logs/system/slurm_oom_cgroup_old.log")["findings"][0]
    assert slurm["initiating_rank"] == 4
    assert "srun's record of the same failure names task 4" in slurm["decided_by"]
    every = [g["decided_by"] for path in ("sample_logs/system/slurm_oom_stepid.log", "sample_logs/faults/checkpoint_corrupt.log")
             for g in _report(path)["findings"]]
    assert every and not any("rank None" in d for d in every)


def _report_text(tmp_path, text: str) -> dict:
    p = tmp_path / "job.log"
    p.write_text(text, encoding="utf-8")
    return _report(str(p))


def test_slurm_oom_takes_srun_task_as_the_rank(tmp_path):
    # hafs-community/HAFS#101 (sample_logs/public/2407.log): slurmstepd's line names no task, srun's names task 4
    r = _report_text(tmp_path, (
        "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.\n"
        "srun: error: Orion-01-01: task 4: Out Of Memory\n"
        "srun: Terminating job step 3495064.0\n"))
    top = r["findings"][0]
    assert (top["id"], top["initiating_rank"]) == ("host-oom", 4)
    assert "task 4" in top["decided_by"]


def test_srun_task_range_names_no_rank(tmp_path):
    # chrisknewman/tusas#149 (2408.log): three tasks hit, none of them is "the" rank
    r = _report_text(tmp_path, (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: nid001277: tasks 1-3: Out Of Memory\n"))
    assert (r["findings"][0]["id"], r["findings"][0]["initiating_rank"]) == ("host-oom", None)


def test_srun_task_is_not_claimed_when_the_workers_print_their_own_ranks(tmp_path):
    # under a per-node launcher the task is a node's agent: with the workers' ranks in the input, no claim
    r = _report_text(tmp_path, (
        "slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.\n"
        "srun: error: Orion-01-01: task 1: Out Of Memory\n"
        "[rank5]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
        "by peer [127.0.0.1]:41364\n"))
    assert next(f for f in r["findings"] if f["id"] == "host-oom")["initiating_rank"] != 1
