"""Failures below the framework, as users pasted them (sample_logs/public/16NN.log and the threads named in
the comments): the driver and the GPU, the host's memory and disks, the fabric, the scheduler. What a
user gets as the first finding, and that the healthy look-alikes stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def first_of(paths: list[str]):
    report = api.diagnose(paths)
    return report.findings[0] if report.findings else None


def first_line(tmp_path, *lines: str):
    p = tmp_path / "job.log"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first_of([str(p)])


@pytest.mark.parametrize("name, expected", [
    ("1600.log", "nvlink-error"),          # terminate ... CUDA error: uncorrectable NVLink error (pytorch#58155)
    ("1601.log", "cuda-driver-mismatch"),  # vLLM engine: Error 804 forward compatibility (gpustack#1540)
    ("1602.log", "cuda-driver-mismatch"),  # the UserWarning form, is_available() False (TorchPod#43)
    ("1603.log", "cuda-driver-mismatch"),  # THCudaCheck error=35 then the RuntimeError (human-pose-estimation#23)
    ("1604.log", "cuda-no-device"),        # No CUDA GPUs are available (CoR-GS#23)
    ("1605.log", "stale-file-handle"),     # [Errno 116] under [rank1]: (ms-swift#6695)
    ("1606.log", "checkpoint-save-failed"),  # safetensors: Error while serializing ... (os error 28) (SimpleTuner#2353)
    ("1607.log", "disk-full"),             # datasets' Arrow cache: [Errno 28], no save frame (LlamaFactory#275)
    ("1608.log", "disk-full"),             # the same under [rank4]: (ms-swift#3551)
    ("1609.log", "pod-evicted"),           # kubectl get pods / describe: Evicted, low on memory (kubeflow/trainer#301)
    ("1612.log", "nccl-error"),            # NET/OFI Couldn't open AV. RC: -22 (aws-ofi-nccl#24)
    ("1613.log", "process-killed"),        # `Killed` glued to tqdm's last redraw (LandMark#65)
    ("1614.log", "process-killed"),        # a collector's stamp, bash's job line with its padding collapsed
    ("1615.log", "process-killed"),        # bash in a zh_CN locale: 已杀死 (dreamerv3#203)
    ("1616.log", "process-killed"),        # PyCharm: exit code 137 (interrupted by signal 9: SIGKILL), full-width
    ("1624.log", "nccl-network-fabric"),   # NET/IB : Got async event : port error (nccl#905)
    ("1625.log", "pod-evicted"),           # kubectl get events: Evicted ... exceeds its request of 0 (KubeFATE#64)
    # the second blind pass (1626-1638)
    ("1626.log", "disk-full"),             # Triton's cache: [Errno 122] Disk quota exceeded (NOAA-EPIC/EAGLE#121)
    ("1627.log", "shm-exhausted"),         # unable to write to file </torch_...> from reduce_storage (nnUNet#294)
    ("1628.log", "shm-exhausted"),         # the TH allocator's 0.4 wording (huaweicloud/dls-example#26)
    ("1629.log", "ecc-error"),             # cuda runtime error (39) : uncorrectable ECC error (semantic-segmentation#33)
    ("1630.log", "ecc-error"),             # darknet's CUDA Error: uncorrectable ECC error encountered (darknet#3496)
    ("1631.log", "slurm-preempted"),       # submitit: Caught signal SIGHUP on <host>: this job is preempted.
    ("1632.log", "process-killed"),        # kubectl: command terminated with exit code 137 (docker-stacks#736)
    ("1633.log", "cuda-driver-mismatch"),  # Error 803 as torch's UserWarning (easydiffusion#379)
    ("1634.log", "cuda-driver-mismatch"),  # glog: Check failed: e == cudaSuccess (803 vs. 0) (nvidia-docker#1256)
    ("1635.log", "cuda-no-device"),        # THCudaCheck error=46: all CUDA-capable devices are busy (pytorch#2704)
    ("1636.log", "cuda-no-device"),        # the newer text of error 46 under [rank0]: (ms-swift#5118)
    ("1638.log", "process-killed"),        # slurmctld: _job_complete: JobId=N WTERMSIG 9 (ArjunaUsers#137)
    # the third blind pass (1639-1646)
    ("1639.log", "storage-io-error"),      # [Errno 5] Input/output error from makedirs under [rank3]: (naifu#35)
    ("1640.log", "storage-io-error"),      # Megatron's async checkpoint writer: [Errno 5] (THUDM/slime#326)
    ("1641.log", "storage-io-error"),      # reading frames: OSError: [Errno 5] (Text4Vis#6)
    ("1642.log", "cuda-no-device"),        # CUDA driver initialization failed, glued to a tqdm bar (SimpleTuner#1888)
    ("1643.log", "cuda-no-device"),        # the same from torch._C._cuda_init (ARF-svox2#9)
    ("1644.log", "dataloader-worker-killed"),  # the shm bus error right after tqdm's redraw (segmentation_models#172)
    ("1645.log", "dataloader-worker-killed"),  # 'DataLoader worker ... killed by signal: Bus error' alone (BasicSR#59)
    ("1646.log", "storage-io-error"),      # TensorFlow's '<path>; Input/output error' on DBFS (tensorflow#20090)
    ("1647.log", "worker-segfault"),       # bash: Bus error (core dumped) after share_memory() (PyTorch-BigGraph#33)
    ("1648.log", "worker-segfault"),       # the same after tqdm's last bar in HD-BET's Docker run (HD-BET#67)
])
def test_public_system_failures_come_first(name, expected):
    f = first_of([str(PUBLIC / name)])
    assert f is not None and f.id == expected


def test_the_ecc_error_is_on_the_rank_the_prefix_names():
    # pytorch/pytorch#113128: torchrun's [default0]: over torch's [rank12]: on the watchdog's line
    f = first_of([str(PUBLIC / "1610.log")])
    assert (f.id, f.initiating_rank) == ("ecc-error", 12)


@pytest.mark.parametrize("name", ["1617.log", "1618.log", "1619.log", "1620.log", "1637.log"])
def test_system_look_alikes_stay_quiet(name):
    # srun retrying step creation; nvidia-smi's ECC column; a succeeded pod with 'Reason: Error'; a PyTorchJob pod;
    # libnvidia-container's start-up debug log ('dxcore initialization failed, continuing ...')
    assert api.diagnose([str(PUBLIC / name)]).findings == []


@pytest.mark.parametrize("line, expected", [
    # NCCL 2.19+ names the HCA port first (nvidia/nccl#1710, as pasted with its markdown link)
    ("node201:127799:127863 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN NET/IB : mlx5_0:1 Got async "
     "event : local access violation work queue error", "nccl-network-fabric"),
    # c10/cuda/CUDAFunctions.cpp with no driver loaded (facebookresearch/pytorch3d#1259)
    ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
     "from http://www.nvidia.com/Download/index.aspx", "cuda-no-device"),
    # a trainer's own log line around the 804 text (ostris/ai-toolkit#240)
    ("Error running job: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non "
     "supported HW", "cuda-driver-mismatch"),
    # the IDE's half-width form (davidsandberg/facenet#236)
    ("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)", "process-killed"),
    # HDF5's wording of ESTALE (h5py/h5py#2346)
    ("OSError: [Errno 116] Unable to synchronously create file (unable to fstat file, errno = 116, error message = "
     "'Stale file handle')", "stale-file-handle"),
    # the kubelet's old condition wording (gitpod-io/gitpod#1229)
    ("Evicted: Pod The node was low on resource: [DiskPressure]", "pod-evicted"),
    # safetensors' older Debug form of ENOSPC is still a failed save (hiyouga/LlamaFactory#5155)
    ('safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
     '"No space left on device" })', "checkpoint-save-failed"),
    # the user's quota, not the disk (KennthShang/HostG#7)
    ("OSError: [Errno 122] Disk quota exceeded: 'out/intermediate.ntw'", "disk-full"),
    # nvidia-smi once the driver lost a board (marian-nmt/marian#251), and its Unknown Error form
    # (NVIDIA/open-gpu-kernel-modules#387, the GPU fell off the bus; fixed by reseating it)
    ("Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU",
     "gpu-fallen-off-bus"),
    ("Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error", "gpu-fallen-off-bus"),
    # NVIDIA's Kubernetes device plugin turning a driver Xid into an unhealthy GPU (NVIDIA/k8s-device-plugin#189)
    ("2020/08/10 19:09:42 XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will "
     "go unhealthy.", "gpu-xid"),
    # UCX under Open MPI: the IB retry counter ran out (openucx/ucx#5199)
    ("[master:19546:0:19546] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 "
     "hw_synd 0/0)", "nccl-network-fabric"),
    # the user-space OOM killers (systemd/systemd#22032, rfjakob/earlyoom#321)
    ("Jan 09 14:32:25 H systemd-oomd[70]: oomd attempting to kill 113 with KILL", "host-oom"),
    ('Jul 18 08:23:17 server.name earlyoom[2608931]: sending SIGTERM to process 2595764 uid 0 "cellxgene": badness 711, '
     'VmRSS 52562 MiB', "host-oom"),
    # bash's kill report behind journald's prefix, the script run as a systemd unit (fatihak/InkyPi#428)
    ('Nov 20 15:10:43 inky inkypi[27237]: /usr/local/bin/inkypi: line 13: 27241 Killed                  python -u '
     '"$(realpath $PROGRAM_PATH/src/inkypi.py)"', "process-killed"),
])
def test_other_wordings_of_the_same_families(tmp_path, line, expected):
    f = first_line(tmp_path, line)
    assert f is not None and f.id == expected


def test_enospc_outside_a_save_is_disk_full_and_under_torch_save_a_failed_save(tmp_path):
    # hpcaitech/Open-Sora#663: pandarallel pickles its chunks into a memory file system that filled up
    f = first_line(tmp_path,
                   "Traceback (most recent call last):",
                   '  File "/opt/conda/envs/pytorch/lib/python3.9/site-packages/pandarallel/core.py", line 263, in closure',
                   "    pickle.dump(chunk, filedescriptor)",
                   "OSError: [Errno 28] No space left on device")
    assert f.id == "disk-full"
    # databrickslabs/dolly#139 (sample_logs/public/310.log): the same errno under torch.save's frames
    assert first_of([str(PUBLIC / "310.log")]).id == "checkpoint-save-failed"


def test_benign_fabric_events_are_not_failures(tmp_path):
    # UCX's note of a subnet-manager re-registration (openucx/ucx#7349): the fabric reconfiguring itself
    assert first_line(tmp_path, "[1630842634.549719] [node01:33913:1]      ib_device.c:482  UCX  WARN  IB Async event "
                                "on mlx5_0: client reregistration on port 1") is None


def test_slurm_node_failure_and_a_plain_cancel(tmp_path):
    # nebius/soperator#854: salloc's notice of the node it lost
    f = first_line(tmp_path, "salloc: error: Node failure on worker-1")
    assert f.id == "slurm-node-failure" and "worker-1" in f.summary
    # bcbio/bcbio-nextgen#741: Slurm 14.x's banner of a plain scancel (the node after the stars) is no failure
    assert first_line(tmp_path, "slurmstepd: *** JOB 1479012 CANCELLED AT 2015-02-04T06:33:25 *** on sh-2-3") is None


@pytest.mark.parametrize("name, expected", [
    # the session-9 blind round (2050-2069)
    ("2050.log", "cuda-driver-mismatch"),  # nvidia-smi: Failed to initialize NVML: Driver/library version mismatch
    ("2051.log", "host-oom"),              # slurmstepd: Detected 2 oom_kill events ... OOM Killed (snakemake plugin #371)
    ("2052.log", "host-oom"),              # slurmstepd: Job N exceeded memory limit (a > b), being killed (coqui STT#2238)
    ("2053.log", "slurm-node-failure"),    # salloc: error: Node failure on worker-1 (soperator#854)
    ("2054.log", "gpu-xid"),               # Xid 13 Graphics Exception, bare dmesg (vllm#5901)
    ("2055.log", "gpu-xid"),               # Xid 13 behind journalctl's `host kernel: [t]` (relion#436)
    ("2056.log", "gpu-xid"),               # Xid 13 MMU Fault behind dmesg -T's date (TensorRT-LLM#15610)
    ("2057.log", "gpu-xid"),               # Xid 62 / 45 in Talos' `ip: kern: warning: [t]:` (open-gpu-kernel-modules#446)
    ("2058.log", "gpu-xid"),               # Xid 119 GSP RPC timeout (open-gpu-kernel-modules#1118)
    ("2059.log", "gpu-xid"),               # Xid 109 CTX SWITCH TIMEOUT (pytorch#74235)
    ("2060.log", "gpu-fallen-off-bus"),    # nvidia <BDF>: AER: can't recover (no error_detected callback) (returnn#1500)
    ("2061.log", "gpu-fallen-off-bus"),    # nvidia-smi: Unable to determine the device handle ...: Unknown Error
    ("2062.log", "too-many-open-files"),   # os.pipe(): [Errno 24] Too many open files (caduceus#58)
    ("2063.log", "too-many-open-files"),   # DupFd in a DataLoader worker: [Errno 24] (ssd.pytorch#91)
    ("2064.log", "pod-evicted"),           # Pod ephemeral local storage usage exceeds the total limit (runbooks#92)
    ("2065.log", "checkpoint-save-failed"),  # torch.save: write(): fd 29 failed with Input/output error (pytorch#10577)
    ("2066.log", "worker-segfault"),       # Illegal instruction (core dumped) (private-gpt#326)
])
def test_public_system_failures_session9(name, expected):
    f = first_of([str(PUBLIC / name)])
    assert f is not None and f.id == expected


@pytest.mark.parametrize("name", ["2067.log", "2068.log", "2069.log"])
def test_session9_healthy_traps_stay_quiet(name):
    # the open module's chipset notice at load, Slurm's 'at some point' warning, an idle nvidia-smi table
    assert api.diagnose([str(PUBLIC / name)]).findings == []


@pytest.mark.parametrize("line, expected", [
    # the newer %ps form of slurmstepd's accounting kill, and srun's echo of it (openbabel/openbabel#2658)
    ("slurmstepd-falkor7: error: Step 1141810.0 exceeded memory limit (52917772 > 20971520), being killed", "host-oom"),
    ("srun: Exceeded job memory limit", "host-oom"),
    # nvidia-container-cli in a container's start hook, NVML's mismatch in lower case
    ("nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown",
     "cuda-driver-mismatch"),
    # the kernel's side of the same mismatch (dmesg, first line of the wrapped record)
    ("[   27.950245] NVRM: API mismatch: the client has the version 415.27, but", "cuda-driver-mismatch"),
    # torch's shared-memory allocator and multiprocessing's fd transfer hitting the same limit
    ("RuntimeError: unable to open shared memory object </torch_3461140_3031248365_2027> in read-write mode: "
     "Too many open files (24)", "too-many-open-files"),
    ("RuntimeError: received 0 items of ancdata", "too-many-open-files"),
])
def test_session9_other_wordings(tmp_path, line, expected):
    f = first_line(tmp_path, line)
    assert f is not None and f.id == expected


def test_slurm_memory_warnings_and_corrected_pcie_errors_are_no_failure(tmp_path):
    # galaxyproject/galaxy#2309: the cgroup plugin's warning on a job that finished
    assert first_line(tmp_path, "slurmstepd: error: Exceeded step memory limit at some point. Step may have been "
                                "partially swapped out to disk.") is None
    # rwth-i6/returnn#1486: corrected AER errors on the GPU's root port, retried by the link
    assert first_line(tmp_path, "[  +0.000316] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0",
                      "[  +0.000005] pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
                      "(Transmitter ID)") is None


@pytest.mark.parametrize("name, expected", [
    # the session-9 second blind round (2070-2079), after the first round's fixes
    ("2071.log", "gpu-xid"),            # Xid 43 / Xid 31 MMU faults behind dmesg -T (pytorch#51382)
    ("2072.log", "ecc-error"),          # nvidia-smi -q: Remapped Rows ... Pending : Yes (gpud#80)
    ("2073.log", "cuda-no-device"),     # nvidia-smi couldn't communicate + nvidia-container-cli load library failed
    ("2074.log", "cuda-no-device"),     # NVRM: No NVIDIA graphics adapter probed! (nouveau owns the GPUs)
    ("2075.log", "cuda-no-device"),     # docker: could not select device driver "" with capabilities: [[gpu]]
    ("2076.log", "host-oom"),           # kubectl describe: CrashLoopBackOff, Last State OOMKilled (gpu-operator#331)
    ("2077.log", "pod-unschedulable"),  # FailedScheduling: 0/6 nodes are available: 6 Insufficient nvidia.com/gpu.
])
def test_public_system_failures_session9_round2(name, expected):
    f = first_of([str(PUBLIC / name)])
    assert f is not None and f.id == expected


def test_an_xid_48_double_bit_error_is_named_an_ecc_error():
    # NVIDIA/gpu-operator#1146: Xid 48 (DBE) and 64 next to another GPU's RmInitAdapter failure
    ids = [f.id for f in api.diagnose([str(PUBLIC / "2070.log")]).findings]
    assert "ecc-error" in ids and "gpu-xid" not in ids[:1]


@pytest.mark.parametrize("name", ["2078.log", "2079.log"])
def test_session9_round2_healthy_traps_stay_quiet(name):
    # an nvidia-smi table with a running job and ECC 0; Slurm's 'at some point' warning with its swap note
    assert api.diagnose([str(PUBLIC / name)]).findings == []


@pytest.mark.parametrize("line, expected", [
    # the image's CUDA needs a newer driver than the host's (libnvidia-container's requirement check)
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.6, please update your driver to a newer "
     "version, or use an earlier cuda container: unknown.", "cuda-driver-mismatch"),
    # the newer kernel module's wording when it finds no GPU
    ("Aug 06 09:17:22 gpu-node-07 kernel: NVRM: No NVIDIA GPU found.", "cuda-no-device"),
    # a GPU pod left pending behind an unschedulable node (NVIDIA/k8s-device-plugin#119)
    (" Warning FailedScheduling  40s (x2 over 40s)  default-scheduler  0/2 nodes are available: 1 Insufficient "
     "nvidia.com/gpu, 1 node(s) were unschedulable.", "pod-unschedulable"),
])
def test_session9_round2_other_wordings(tmp_path, line, expected):
    f = first_line(tmp_path, line)
    assert f is not None and f.id == expected


def test_nvlink_xids_are_nvlink_errors_and_other_xids_stay_gpu_xid():
    # NVIDIA/nccl#2241: Xid 145 (NVLink RLW) first, then Xid 137 (not an NVLink code the catalog names)
    ids = [f.id for f in api.diagnose([str(PUBLIC / "2080.log")]).findings]
    assert ids[:2] == ["nvlink-error", "gpu-xid"]
    # akash-network/support#244: application Xids 43 / 31 first, the Xid 94 (contained ECC) of another GPU after
    ids = [f.id for f in api.diagnose([str(PUBLIC / "426.log")]).findings]
    assert ids[:2] == ["gpu-xid", "ecc-error"]


@pytest.mark.parametrize("line, expected", [
    # the kernel's OOM report starts with the allocating task; an excerpt may end before the kill
    ("Jun 18 07:44:52 jbarnes-g45 kernel: [64377.426677] apt-check invoked oom-killer: gfp_mask=0x201da, order=0, "
     "oom_adj=0", "host-oom"),
    # NVML in a container whose device cgroup lost the GPUs (NVIDIA/nvidia-container-toolkit's known daemon-reload case)
    ("Failed to initialize NVML: Unknown Error", "cuda-no-device"),
    # the block layer's record of a failing disk under the job's data or checkpoints
    ("blk_update_request: I/O error, dev nvme0n1, sector 32776 op 0x1:(WRITE) flags 0x3000 phys_seg 6 prio class 0",
     "storage-io-error"),
])
def test_session9_kernel_and_nvml_wordings(tmp_path, line, expected):
    f = first_line(tmp_path, line)
    assert f is not None and f.id == expected


def test_a_vm_floppy_probe_is_no_storage_error(tmp_path):
    # the harmless boot-time noise of virtual machines' empty floppy drive
    assert first_line(tmp_path, "blk_update_request: I/O error, dev fd0, sector 0") is None


@pytest.mark.parametrize("name", ["2084.log", "2085.log", "2086.log", "2087.log"])
def test_the_nvidia_container_hook_failing_is_no_usable_gpu(name):
    # libnvidia-container's '<stage> error: ...' (device, initialization, container), also inside runc's escaped chain
    f = first_of([str(PUBLIC / name)])
    assert f is not None and f.id == "cuda-no-device"
    assert "\\" not in f.summary and "nvidia-container-cli" in f.summary


def test_srun_labelled_task_killed_for_memory_is_the_initiating_rank():
    # NOAA-EMC/global-workflow#1301: srun -l's task 2 OOM-killed, the others terminated after it
    f = first_of([str(PUBLIC / "2089.log")])
    assert (f.id, f.initiating_rank) == ("host-oom", 2)


def test_kubectl_describe_exit_137_is_a_kill_and_oomkilled_stays_host_oom(tmp_path):
    # kubernetes/kubernetes#122256: Last State Terminated, Reason Error, Exit Code 137 (128 + SIGKILL)
    f = first_line(tmp_path, "    Last State: Terminated", "      Reason: Error", "      Exit Code: 137",
                   "      Started: Mon, 13 Nov 2023 03:48:52 +0100")
    assert f is not None and f.id == "process-killed"
    # gimlet-io/gimlet#649: the same block with the reason OOMKilled is the container's memory limit
    f = first_line(tmp_path, "Last State:     Terminated", "  Reason:       OOMKilled", "  Exit Code:    137",
                   "  Started:      Fri, 15 Sep 2023 09:56:14 +0200")
    assert f is not None and f.id == "host-oom"
    assert [g.id for g in api.diagnose([str(tmp_path / "job.log")]).findings] == ["host-oom"]


def test_xid_79_after_a_surprise_down_is_the_gpu_falling_off_the_bus():
    # wilicc/gpu-burn#1: a fatal PCIe Surprise Down, the older kernel's 'device has no AER-aware driver', Xid 79
    f = first_of([str(PUBLIC / "2090.log")])
    assert f is not None and f.id == "gpu-fallen-off-bus"
