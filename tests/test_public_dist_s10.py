"""Distributed and launch failures users posted (sample_logs/public/2200-2225, session 10): Horovod's
stall check and shutdown, Open MPI's start-up, the EFA net plugin, elastic rendezvous, and launchers
that could not start the job. What a user reads first, the rank the text names, and that the healthy
look-alikes stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from tests.conftest import diagnose_lines, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _report(name: str):
    return api.diagnose([str(PUBLIC / name)])


@pytest.mark.parametrize("name, expected", [
    ("2200.log", "collective-desync"),            # Horovod 0.13 stall: rank 3 ready on the loss, 0-2 on gradients (horovod#336)
    ("2201.log", "collective-timeout"),           # Horovod 0.15 stall: [missing ranks: 0] on every broadcast (horovod#534)
    ("2205.log", "nccl-net-plugin-init-failed"),  # NET/OFI OFI fi_getinfo() call failed: No data available (aws-ofi-nccl#1020)
    ("2206.log", "nccl-net-plugin-init-failed"),  # aws-ofi-nccl initialization failed, then Using network Socket (aws-k8s-tester#454)
    ("2207.log", "nccl-net-plugin-init-failed"),  # libfabric's provider efa output empty list, CloudWatch rows (aws-ofi-nccl#889)
    ("2208.log", "nccl-net-plugin-init-failed"),  # plugin <= 1.7: Couldn't find any optimal provider (aws-efa-nccl-baseami-pipeline#2)
    ("2213.log", "rendezvous-closed"),            # the agent's traceback ends in RendezvousClosedError (pytorch#91943)
    ("2215.log", "command-not-found"),            # slurmstepd: error: execve(): torchrun: No such file or directory (CSCfi#1)
    ("2216.log", "command-not-found"),            # /bin/sh: 1: torchrun: not found (LlamaFactory#5216)
    ("2217.log", "command-not-found"),            # sh: 1: .../bin/torchrun: not found, then the wrapper's traceback (GLEM#11)
    ("2218.log", "mpi-init-failed"),              # *** An error occurred in MPI_Init_thread on a NULL communicator (horovod#465)
    ("2222.log", "command-not-found"),            # mpirun was unable to find the specified executable file (horovod#347)
    ("2223.log", "command-not-found"),            # Open MPI's execve of the .py itself: Exec format error (horovod#821)
    ("2224.log", "command-not-found"),            # bash: .../anaconda3/bin/python3: No such file or directory (horovod#1396)
    ("2225.log", "command-not-found"),            # python: can't open file 'tensorflow_mnist.py' under mpirun (horovod#1068)
    ("2226.log", "slurm-submit-rejected"),        # sbatch: Requested node configuration is not available (mlcommons/training#824)
    ("2227.log", "slurm-submit-rejected"),        # the same from sinteractive, GPUs without the GPU partition (scicomp-docs#26)
    ("2228.log", "slurm-submit-rejected"),        # srun: Unable to create step ...: Invalid generic resource (waveorder#201)
    ("2229.log", "slurm-submit-rejected"),        # srun: Unable to allocate resources: Requested time limit is invalid (capreolus#172)
    ("2230.log", "pod-image-pull-failed"),        # kubectl describe: State Waiting, Reason ImagePullBackOff (FfDL#74)
    ("2231.log", "pod-image-pull-failed"),        # kubelet: failed to "StartContainer" ... Back-off pulling image (kubeflow#2698)
    ("2232.log", "pod-image-pull-failed"),        # kubectl logs: waiting to start: trying and failing to pull image (pytorch-operator#264)
    ("2234.log", "remote-launch-failed"),         # ssh: connect to host ... Connection refused, ORTE daemons not started (horovod#504)
    ("2235.log", "remote-launch-failed"),         # bash: orted: command not found on the remote host (horovod#1021)
    ("2236.log", "remote-launch-failed"),         # ssh: Could not resolve hostname of a worker pod (volcano#2226)
    ("2237.log", "remote-launch-failed"),         # pdsh: Permission denied (publickey,password), ssh exit 255 (DeepSpeed#5709)
    ("2238.log", "remote-launch-failed"),         # DeepSpeed launcher: host=... was not reachable via ssh (hpcac/2023-APAC-HPC-AI#1)
    ("2239.log", "remote-launch-failed"),         # horovodrun's task server: ssh ... Connection refused (horovod#1226)
    ("2240.log", "rendezvous-timeout"),           # store based barrier: 4 of 8 ranks joined (Megatron-DeepSpeed#338)
    ("2241.log", "gpu-p2p-unsupported"),          # NCCL p2p.cc: failed to open CUDA IPC handle : 217 (ray_lightning#24)
    ("2242.log", "gpu-p2p-unsupported"),          # torch's CUDA error 217 at a vLLM start-up (ai-dynamo/dynamo#1229)
    ("2243.log", "gpu-p2p-unsupported"),          # CUDA error 217 at ggml-cuda.cu (llama.cpp#3230)
    ("2245.log", "pod-volume-mount-failed"),      # FailedMount: timeout expired waiting for volumes to attach/mount (kubernetes#29297)
    ("2246.log", "pod-volume-mount-failed"),      # FailedMount: MountVolume.MountDevice failed (cstor-operators#467)
    ("2247.log", "read-only-filesystem"),         # makedirs of a cache dir: [Errno 30] Read-only file system: '/u' (PrefixTuning#27)
    ("2248.log", "read-only-filesystem"),         # a trainer's model dir at macOS's read-only root (ImageAI#594)
])
def test_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]


def test_horovod_stall_names_the_missing_rank():
    f = _report("2201.log").findings[0]
    assert f.initiating_rank == 0
    assert "rank 0 never submitted" in f.decided_by


def test_horovod_ready_ranks_claim_no_rank():
    # v0.13 lists the ranks that are ready, not the one missing: no rank can be read off it
    assert _report("2200.log").findings[0].initiating_rank is None


def test_mpirun_first_exit_is_the_rank_of_the_missing_script():
    # mpirun: "The first process to do so was: Process name: [[3358,1],1]"
    findings = _report("2225.log").findings
    assert findings[0].id == "command-not-found"
    assert 1 in {f.initiating_rank for f in findings}


@pytest.mark.parametrize("name", ["2219.log", "2220.log", "2221.log", "2233.log", "2244.log", "2249.log"])
def test_healthy_runs_stay_quiet(name):
    # Open MPI's 'Read -1, expected ..., errno = 1', NCCL's 'Failed to open libibverbs.so' on one host,
    # [1,N]<stdout> tagged tqdm progress, squeue's pending-then-running jobs, cuda-gdb's peer-access notes,
    # the kernel's errors=remount-ro mount notice
    assert ids(_report(name)) == []


def test_an_efa_plugin_that_started_is_not_a_failure(tmp_path):
    report = diagnose_lines(tmp_path, [  # NVIDIA/nccl#1597
        "8h200-3:6310:6318 [0] NCCL INFO NET/OFI Selected Provider is efa (found 16 nics)",
        "8h200-2:6831:6840 [0] NCCL INFO NET/OFI Support for global registrations: true",
        "8h200-2:6831:6840 [0] NCCL INFO Using network Libfabric",
    ])
    assert ids(report) == []


def test_an_address_vector_failure_stays_an_nccl_error():
    # NET/OFI Couldn't open AV at connect time is not a plugin that did not start (aws-ofi-nccl#24)
    assert ids(_report("1612.log"))[:1] == ["nccl-error"]


@pytest.mark.parametrize("line", [
    "bmtrain_mgpu.sh: 行 84: torchrun：未找到命令",  # bash in a zh_CN locale (FlagAI#553)
    "train.sh: 1: srun: not found",                 # dash in a job script (SAFECount#16)
])
def test_shell_not_found_wordings(tmp_path, line):
    assert ids(diagnose_lines(tmp_path, [line])) == ["command-not-found"]


def test_a_missing_tool_that_is_not_the_launcher_stays_quiet(tmp_path):
    assert ids(diagnose_lines(tmp_path, ["-bash: torchlambda: command not found"])) == []  # torchlambda#11


def test_a_closed_rendezvous_after_a_crash_is_collateral():
    # node 0's agent ends with RendezvousClosedError after rank 3 failed: grouped under the cascade
    root = api.diagnose([str(PUBLIC.parent / "multinode" / "restart_attempts.log")]).findings[0]
    assert root.id == "rank-crash-cascade"
    assert "rendezvous-closed" in [c.id for c in root.collateral]


def test_a_step_of_an_ending_job_is_not_a_refused_submission(tmp_path):
    # srun's step request after the job was cancelled or hit its limit: the ending is the finding
    report = diagnose_lines(tmp_path, [  # a Biowulf user's notes of CANDLE's MPI tests, srun interrupted in an allocation
        "srun: error: Unable to create step for job 63094233: Job/step already completing or completed",
    ])
    assert "slurm-submit-rejected" not in ids(report)


def test_a_site_wrapper_of_sbatch_is_still_slurm(tmp_path):
    report = diagnose_lines(tmp_path, [  # the same notes: Biowulf's sbatch.exe
        "sbatch.exe: error: QOSMaxNodePerJobLimit",
        "sbatch.exe: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
    ])
    assert ids(report) == ["slurm-submit-rejected"]


def test_a_git_clone_denied_is_not_a_launcher(tmp_path):
    # GitHub's answer to a clone without a key: a setup step, not a rank that could not be started
    report = diagnose_lines(tmp_path, ["git@github.com: Permission denied (publickey)."])
    assert "remote-launch-failed" not in ids(report)


def test_the_store_barrier_names_no_culprit():
    # only how many ranks joined (4 of 8) is printed, not which: no rank is claimed
    f = _report("2240.log").findings[0]
    assert f.id == "rendezvous-timeout" and f.initiating_rank is None


def test_the_kernel_remounting_a_disk_read_only(tmp_path):
    report = diagnose_lines(tmp_path, [  # coreos/bugs#1811
        "Feb 23 20:53:32 <IP> kernel: Aborting journal on device xvda9-8.",
        "Feb 23 20:53:32 <IP> kernel: EXT4-fs (xvda9): Remounting filesystem read-only",
    ])
    assert ids(report)[:1] == ["read-only-filesystem"]
