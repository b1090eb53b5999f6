"""Kernel / Slurm / shell / DataLoader / checkpoint lines (real; URLs in sample_logs/system/README.md) -> events."""

from __future__ import annotations

import pytest

from nanscope import api
from nanscope.model import ErrorEvent, LifecycleEvent


def events_of(tmp_path, text: str) -> list:
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return list(api.events([str(p)]))


def errors(tmp_path, text: str) -> list[ErrorEvent]:
    return [e for e in events_of(tmp_path, text) if isinstance(e, ErrorEvent)]


ONE_ERROR = [
    # kernel OOM killer, several front-ends
    ("[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, "
     "file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0",  # ShengcaiLiao/QAConv#19
     "host_oom", None, {"pid": 698405, "process": "python", "source": "kernel"}),
    ("May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed process 15784 (python3) "
     "total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB",  # docker/for-linux#1001
     "host_oom", None, {"pid": 15784, "process": "python3", "source": "kernel"}),
    ("[Sun Mar 30 08:24:00 2025] Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, "
     "anon-rss:153,700,88kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0",  # 0jc1/py-autovod#7
     "host_oom", None, {"pid": 7899, "process": "python"}),
    ("[ 4018.450000] Killed process 935 (python) total-vm:113656kB, anon-rss:102104kB, file-rss:0kB, shmem-rss:0kB",  # openbmc/openbmc#1887
     "host_oom", None, {"pid": 935, "process": "python"}),
    # Slurm
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.",  # tusas#149
     "host_oom", None, {"source": "slurm", "count": 1, "step": "440575.0"}),
    ("slurmstepd: error: Detected 2 oom_kill events in StepId=JOBID.13. Some of the step tasks have been OOM Killed.",  # snakemake-executor-plugin-slurm#371
     "host_oom", None, {"source": "slurm", "count": 2, "step": "JOBID.13"}),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. Some of your processes may have been "
     "killed by the cgroup out-of-memory handler.",  # hafs-community/HAFS#101
     "host_oom", None, {"source": "slurm", "count": 1, "step": "3495064.0"}),
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 3756240.batch cgroup.",  # lanl/PyBNF#118
     "host_oom", None, {"source": "slurm", "count": 2, "step": "3756240.batch"}),
    ("srun: error: nid001277: tasks 1-3: Out Of Memory", "host_oom", None, {"source": "srun", "tasks": [1, 2, 3]}),
    ("srun: error: sdumont6156: task 0: Out Of Memory", "host_oom", 0, {"source": "srun", "tasks": [0]}),  # nextflow#5932
    ("slurmstepd: error: *** JOB 3884617 ON node023 CANCELLED AT 2018-08-19T16:30:21 DUE TO TIME LIMIT ***",  # marbl/canu#1052
     "slurm_time_limit", None, {"job": "3884617", "node": "node023"}),
    ("slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***",  # marbl/canu#1067 (old order)
     "slurm_time_limit", None, {"job": "830329", "node": "n447"}),
    # srun task deaths: the task is the rank
    ("srun: error: Orion-18-69: task 289: Bus error", "worker_failed", 289, {"source": "srun", "node": "Orion-18-69"}),  # HAFS#101
    ("srun: error: nid01934: tasks 2,4-5,7: Terminated", "worker_failed", None, {"tasks": [2, 4, 5, 7]}),  # desihub/desitarget#628
    # shell
    ("Killed", "killed", None, {"source": "shell"}),
    ("/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 main.py --prop hform "
     "--epochs 400 --lr_milestones 50 100 200 --gamma 0.25",  # ArjunaCluster/ArjunaUsers#52 (the issue wraps it in quotes)
     "killed", None, {"pid": 8156}),
    # DataLoader
    ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.", "dataloader_worker_killed", None,
     {"pids": [19597], "signal_name": "Killed"}),  # hezhangsprinter/DCPDN#12
    ("RuntimeError: DataLoader worker (pid 25130) is killed by signal: Illegal instruction. ", "dataloader_worker_killed", None,
     {"pids": [25130]}),  # rowanz/r2c#18 wording
    ("RuntimeError: DataLoader worker (pid(s) 1234, 5678) exited unexpectedly", "dataloader_worker_killed", None,
     {"pids": [1234, 5678]}),  # torch/utils/data/dataloader.py template
    # checkpoints
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",  # CompVis/stable-diffusion#93
     "checkpoint_corrupt", None, {"format": "torch_zip"}),
    ("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
     "checkpoint_corrupt", None, {"format": "safetensors", "detail": "MetadataIncompleteBuffer"}),
    ("_pickle.UnpicklingError: invalid load key, 'v'.", "checkpoint_corrupt", None, {"format": "pickle"}),
]


@pytest.mark.parametrize("line,kind,rank,fields", ONE_ERROR)
def test_one_error_per_line(tmp_path, line, kind, rank, fields):
    errs = errors(tmp_path, line)
    assert len(errs) == 1, errs
    ev = errs[0]
    assert ev.error == kind and ev.framework == "system"
    assert ev.rank == rank
    for k, v in fields.items():
        assert ev.fields[k] == v, k


@pytest.mark.parametrize("line,exc_type", [
    ("RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.", "RuntimeError"),
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory", "RuntimeError"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", "safetensors_rust.SafetensorError"),
    ("_pickle.UnpicklingError: invalid load key, '<'.", "_pickle.UnpicklingError"),
])
def test_exception_lines_keep_their_type_and_are_not_generic(tmp_path, line, exc_type):
    """python.py would call these a generic `exception`; this parser runs first and keeps exc_type."""
    errs = errors(tmp_path, line)
    assert [(e.error != "exception", e.exc_type) for e in errs] == [(True, exc_type)]


def test_signals_and_exit_codes(tmp_path):
    killed = errors(tmp_path, "srun: error: frontier07200: task 5: Killed")[0]
    assert (killed.rank, killed.signal) == (5, "SIGKILL")
    exited = errors(tmp_path, "srun: error: node12: task 3: Exited with exit code 1")[0]
    assert (exited.rank, exited.exitcode, exited.signal) == (3, 1, None)
    dl = errors(tmp_path, "RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.")[0]
    assert dl.signal == "SIGKILL"


def test_one_kernel_kill_is_one_event(tmp_path):
    """The kernel prints oom-kill: and Out of memory: for the same kill (equinor/ert#7797)."""
    text = (
        "2024-04-29T14:55:41,679685+02:00 oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
        "global_oom,task_memcg=/user.slice/user-21417.slice/user@21417.service,task=perl,pid=1440763,uid=21417\n"
        "2024-04-29T14:55:41,679700+02:00 Out of memory: Killed process 1440763 (perl) total-vm:87033376kB, "
        "anon-rss:60356340kB, file-rss:0kB, shmem-rss:0kB, UID:21417 pgtables:169956kB oom_score_adj:0"
    )
    errs = errors(tmp_path, text)
    assert len(errs) == 1 and errs[0].fields["pid"] == 1440763 and errs[0].fields["process"] == "perl"


def test_job_and_step_cancellation_is_reported_once(tmp_path):
    """Slurm prints the JOB and the STEP line for one time-limit cancellation."""
    text = ("slurmstepd: error: *** JOB 494583 ON node7 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***\n"
            "slurmstepd: error: *** STEP 494583.0 ON node7 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***")
    assert [e.error for e in errors(tmp_path, text)] == ["slurm_time_limit"]


def test_cancel_without_reason_is_an_end_not_an_error(tmp_path):
    evs = events_of(tmp_path, "slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***")
    assert len(evs) == 1 and isinstance(evs[0], LifecycleEvent) and evs[0].action == "end"


LOOKALIKES = [
    # OOM dump table header and the reaper (part of a kill already reported, not a kill)
    "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
    "[441281.626336] oom_reaper: reaped process 698405 (python), now anon-rss:0kB, file-rss:68664kB, shmem-rss:53172kB",
    # Slurm submission errors and job-script echoes
    "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)",
    "#SBATCH --time=744:00:00 #duration time",
    "srun: Terminating StepId=440575.0",
    "srun: Job step aborted: Waiting up to 47 seconds for job step to finish.",
    # prose mentioning Killed; a torch warning about workers
    "Killed processes are restarted by the supervisor",
    "UserWarning: This DataLoader will create 8 worker processes in total. Our suggested max number of worker in "
    "current system is 4, which is smaller than what this DataLoader is going to create.",
    # a state-dict mismatch is not a corrupt file
    "RuntimeError: Error(s) in loading state_dict for Net:",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes(tmp_path, line):
    assert [e for e in events_of(tmp_path, line) if e.framework == "system"] == []


def test_the_oom_report_head_counts_once(tmp_path):
    """The report's first line is the only trace of the OOM killer in an excerpt cut before the kill; with
    the kill line after it, the kill (it names the victim) is the one event."""
    head = "python invoked oom-killer: gfp_mask=0x14200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0"
    kill = ("[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, "
            "file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0")
    assert [(e.error, e.fields.get("invoked_by")) for e in errors(tmp_path, head)] == [("host_oom", "python")]
    assert [(e.error, e.fields.get("pid")) for e in errors(tmp_path, head + "\n" + kill)] == [("host_oom", 698405)]


@pytest.mark.parametrize("line,signal,pid,core", [
    # bash without a space before `(core dumped)` (xy-guo/MVSNet_pytorch#53, sample_logs/public/2109.log)
    ("./train.sh: line 3:  1098 Floating point exception(core dumped) python train.py --dataset=dtu_yao", "SIGFPE", 1098, True),
    # zsh's lowercase job report (pytorch/pytorch#44547, sample_logs/public/2110.log) and its foreground form
    ("    20121 floating point exception (core dumped)", "SIGFPE", 20121, True),
    ("zsh: segmentation fault (core dumped)  python train.py", "SIGSEGV", None, True),
    ("[1]    4242 bus error  python train.py", "SIGBUS", 4242, False),
])
def test_shell_crash_reports_of_bash_and_zsh(tmp_path, line, signal, pid, core):
    got = errors(tmp_path, line + "\n")
    assert [(e.error, e.signal, e.fields.get("pid"), e.fields.get("core_dumped")) for e in got] == [("worker_failed", signal, pid, core)]


def test_a_crash_word_in_prose_is_no_shell_report(tmp_path):
    assert errors(tmp_path, "This caused a segmentation fault in the loader\nzsh: command exited normally\n") == []
