"""Message families first seen in the blind public cases (sample_logs/public/9NN.log): what a user
who pastes such a log gets as the first finding, and which rank it names.

Every input below is lines copied from the public thread named in the comment (the same excerpts
are in sample_logs/public with their provenance), cut to what the family needs.
"""

from __future__ import annotations

import pytest

from nanscope import api

RAY_DEAD = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
            "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. "
            "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. "
            "(3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.")


def first(tmp_path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    report = api.diagnose([str(p)])
    return report.findings[0] if report.findings else None, report


def test_ray_actor_death_is_a_killed_process_on_the_verl_rank(tmp_path):
    # Agent-RL/ReCall#62: the exception is only Ray telling the caller; the worker died with no error of its own
    f, _ = first(tmp_path, "\n".join([
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
        "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict",
        "\tpid: 12529",
        "\tname: 5SO3sRWorkerDict_0:1",
        "\tip: 10.166.157.101",
        RAY_DEAD,
    ]))
    assert (f.id, f.initiating_rank) == ("process-killed", 1)


def test_ray_actor_on_a_later_placement_group_names_no_rank(tmp_path):
    # RUC-NLPIR/Tool-Star#10: WorkerDict_2:5 is local rank 5 of the third node; its rank depends on the layout
    f, _ = first(tmp_path, "\n".join([
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
        "\tname: OvenE5WorkerDict_2:5",
        RAY_DEAD,
    ]))
    assert (f.id, f.initiating_rank) == ("process-killed", None)


def test_ray_actor_that_raised_is_still_an_exception(tmp_path):
    # a USER_ERROR exit is the actor's own exception, not a kill
    f, _ = first(tmp_path, "\n".join([
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "The actor is dead because its worker process has died. Worker exit type: USER_ERROR Worker exit detail: "
        "Worker exits with an exit code 1.",
    ]))
    assert f.id == "uncaught-exception"


@pytest.mark.parametrize("code, expected", [(-9, "process-killed"), (1, "uncaught-exception")])
def test_deepspeed_launcher_return_code(tmp_path, code, expected):
    # deepspeedai/DeepSpeed#3232 (-9) and #5302 (1): only the launcher's lines are in the paste
    f, _ = first(tmp_path, "\n".join([
        "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266",
        "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
        f"'--local_rank=0', '--zero_stage', '2'] exits with return code = {code}",
    ]))
    assert (f.id, f.initiating_rank) == (expected, None)  # the printed --local_rank is no rank evidence


def test_deepspeed_launcher_after_an_oom_keeps_the_oom_first(tmp_path):
    # deepspeedai/DeepSpeed#3869
    f, report = first(tmp_path, "\n".join([
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 978.00 MiB (GPU 0; 4.00 GiB total capacity; "
        "1.68 GiB already allocated; 0 bytes free; 2.72 GiB reserved in total by PyTorch)",
        "[2023-07-04 17:31:27,755] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 953850",
        "[2023-07-04 17:31:27,755] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'infer.py', "
        "'--local_rank=0'] exits with return code = 1",
    ]))
    assert f.id == "cuda-oom"
    assert "uncaught-exception" not in [g.id for g in report.findings]


def test_torchrun_block_alone_blames_its_rank(tmp_path):
    # isekai-portal/Link-Context-Learning#11: the tail of the ChildFailedError report is all there is
    f, _ = first(tmp_path, "\n".join([
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 8181)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]))
    assert (f.id, f.initiating_rank) == ("uncaught-exception", 1)


def test_heartbeat_monitor_stuck_watchdog_is_a_hang(tmp_path):
    # the GRPO thread in sample_logs/public/226.log (torch 2.5 wording)
    f, _ = first(tmp_path, "[rank0]:[E608 14:09:10.210136079 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) "
                           "Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
                           "monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., "
                           "CudaEventDestroy) hang blocking the watchdog.")
    assert f.id == "collective-timeout"


def test_vllm_v0_zero_gpu_blocks(tmp_path):
    # netease-youdao/QAnything#302: the ValueError itself is cut from the paste
    f, _ = first(tmp_path, "INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256")
    assert f.id == "vllm-startup-oom"


def test_epoch_pair_lines_and_bracketed_keys_carry_the_nan(tmp_path):
    # vpetren/gradnorm_tf#17
    f, _ = first(tmp_path, "\n".join(["epoch: 3450 loss: 0.21063452526926987"] +
                                     [f"epoch: {e} loss: nan" for e in range(3451, 3456)]))
    assert (f.id, f.first_step) == ("nan-persistent", 3451)
    # nv-tlabs/LION#9
    f, _ = first(tmp_path, "\n".join(
        f"2023-01-25 00:21:{s:02d}.074 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E{e} iter[ 14/ 15] | "
        f"[Loss] {loss} | [exp] ./exp/car | [step]   {step} | [url] none | [time] 0.4m (~5h) |"
        for s, e, loss, step in [(9, 5, "51566519.44", 89), (34, 6, "nan", 104), (40, 7, "nan", 119), (50, 8, "nan", 134)]))
    assert (f.id, f.first_step) == ("nan-persistent", 104)


def test_an_epoch_in_prose_is_no_step(tmp_path):
    f, _ = first(tmp_path, "After epoch 3 the loss 2.5 went down a lot, so we stopped the sweep early.")
    assert f is None


def test_kubernetes_oomkilled_container(tmp_path):
    # kubernetes/kubernetes#131530 (kubectl describe pod)
    f, _ = first(tmp_path, "State:          Terminated\n  Reason:       OOMKilled\n  Exit Code:    0")
    assert f.id == "host-oom"


@pytest.mark.parametrize("line, expected", [
    # NVIDIA/nccl#1842: registering memory with the NIC fails: the communicator is lost
    ("misc/ibvwrap.cc:182 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Invalid argument ", "nccl-error"),
    # zai-org/ImageReward#65: a NIC that cannot be opened while listing devices is skipped
    ("65826-86bd789679-2dxbs:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed", None),
])
def test_ib_verbs_failures(tmp_path, line, expected):
    f, _ = first(tmp_path, line)
    assert (f.id if f else None) == expected


def test_nccl_error_without_the_colon_is_an_nccl_error(tmp_path):
    # ByteDance-Seed/VeOmni#131
    f, _ = first(tmp_path, "[rank9]: torch.distributed.DistBackendError: NCCL error in /root/source/pytorch/torch/csrc/"
                           "distributed/c10d/NCCLUtils.cpp:77, unhandled system error (run with NCCL_DEBUG=INFO for "
                           "details), NCCL version 2.26.6")
    assert f.id == "nccl-error"


def test_mpirun_first_nonzero_exit_names_the_rank(tmp_path):
    # horovod/horovod#1421 (sample_logs/public/421.log)
    f, _ = first(tmp_path, "\n".join([
        "Primary job  terminated normally, but 1 process returned",
        "a non-zero exit code. Per user-direction, the job has been aborted.",
        "mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:",
        "",
        "  Process name: [[29973,1],0]",
        "  Exit code:    1",
    ]))
    assert (f.id, f.initiating_rank) == ("rank-crash-cascade", 0)


def test_mpirun_signal_9_is_a_killed_rank(tmp_path):
    f, _ = first(tmp_path, "mpirun noticed that process rank 3 with PID 4242 on node gpu-01 exited on signal 9 (Killed).")
    assert (f.id, f.initiating_rank) == ("process-killed", 3)


def test_an_exit_code_line_outside_the_mpirun_block_is_nothing(tmp_path):
    f, _ = first(tmp_path, "  Exit code:    1")
    assert f is None


@pytest.mark.parametrize("line, expected", [
    # PKU-YuanGroup/Open-Sora-Plan#386 (NCCL <= 2.18): NCCL's own buffer refused by a full GPU is the OOM itself
    ("ins-7df6eojsifuykig9:3018451:3018451 [0] enqueue.cc:1085 NCCL WARN Cuda failure 'out of memory'", "cuda-oom"),
    # NVIDIA/nccl#1283 (2.19+ prints the number)
    ("n176-080-198:2657296:2658232 [0] include/alloc.h:102 NCCL WARN Cuda failure 1 'invalid argument'", "nccl-error"),
    # NVIDIA/nccl-tests#166: the SHM transport's segment in a full /dev/shm
    ("ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
     "/dev/shm/nccl-KWfVyt (size 5967872)", "shm-exhausted"),
])
def test_nccl_warn_failures_that_end_the_communicator(tmp_path, line, expected):
    f, _ = first(tmp_path, line)
    assert f.id == expected


def test_raylet_system_error_report_is_a_killed_worker(tmp_path):
    # verl-project/verl#217
    f, _ = first(tmp_path, "(raylet) A worker died or was killed while executing a task by an unexpected system error. "
                           "To troubleshoot the problem, check the logs for the dead worker. Worker PID: 3566775 "
                           "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
                           "connection error code 2. End of file.")
    assert f.id == "process-killed"


def test_ray_task_error_wrapping_torch_oom(tmp_path):
    # markingprowlik/EasyR1#9
    f, _ = first(tmp_path, "ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_ref_update_actor() "
                           "(pid=118848, ip=10.130.71.7, actor_id=b2ba64f62469495ea505301701000000)")
    assert f.id == "cuda-oom"


def test_ray_wrapper_and_cause_of_one_actor_death_are_one_finding(tmp_path):
    # Agent-RL/ReCall#62: RayTaskError(RayActorError) is the same death as the RayActorError below it
    _, report = first(tmp_path, "\n".join([
        "ray.exceptions.RayTaskError(RayActorError): ray::main_task() (pid=10066, ip=10.166.157.101)",
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.",
        "\tname: 5SO3sRWorkerDict_0:1",
        RAY_DEAD,
    ]))
    assert [g.id for g in report.findings] == ["process-killed"]


def test_a_cublas_status_exception_is_cublas_error_not_a_bare_uncaught_exception(tmp_path):
    # isl-org/DPT#4 (sample_logs/public/1117.log): CUBLAS_STATUS_EXECUTION_FAILED had no CUDA signature of its own
    # and was reported as the uncaught exception; session 12 gave cuBLAS status errors theirs (cublas-error)
    p = tmp_path / "run.log"
    p.write_text("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, "
                 "opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, "
                 "CUBLAS_GEMM_DFALT_TENSOR_OP)`\n", encoding="utf-8")
    report = api.diagnose([str(p)])
    assert [f.id for f in report.findings] == ["cublas-error"]


# --- training stacks, blind round s8-train (sample_logs/public/1200-1219) ---

NCCL_TESTS_FAILURE = "HCA-14: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"


def test_nccl_tests_failure_is_the_nccl_error_not_mpiruns_exit_code(tmp_path):
    # NVIDIA/nccl-tests#322 (1203.log): every host prints nccl-tests' NCCLCHECK report, then mpirun's block names
    # the first process that exited (code 3 = testNcclError); the NCCL failure is what to fix
    f, report = first(tmp_path, "\n".join([
        NCCL_TESTS_FAILURE,
        " .. HCA-14 pid 1015577: Test failure common.cu:915",
        "HCA-28: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '",
        "--------------------------------------------------------------------------",
        "mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:",
        "",
        "  Process name: [[44912,1],251]",
        "  Exit code:    3",
        "--------------------------------------------------------------------------",
    ]))
    assert f.id == "nccl-error"
    assert report.verdict == "retryable"
    assert "uncaught-exception" not in [g.id for g in report.findings]


def test_nccl_tests_failure_before_2019_had_no_host_name(tmp_path):
    # NVIDIA/nccl-tests#5
    f, _ = first(tmp_path, "NCCL failure all_reduce.cu:95 'unhandled cuda error'")
    assert f.id == "nccl-error"


def test_ucx_bus_error_report_is_a_segfaulted_worker(tmp_path):
    # msr-fiddle/pipedream#76 (1207.log): docker's 64 MB /dev/shm; UCX's handler prints the signal, torchrun
    # only the bare ChildFailedError header
    f, _ = first(tmp_path, "\n".join([
        "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
        "==== backtrace (tid:   3095) ====",
        " 0 0x0000000000043090 killpg()  ???:0",
        " 4 0x0000000000059e97 ncclGetUniqueId()  ???:0",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]))
    assert f.id == "worker-segfault"
    assert "SIGBUS" in f.summary


def test_faulthandler_segfault_is_a_native_crash_but_an_abort_is_not(tmp_path):
    # pytorch/pytorch#72086 (the torchrun agent itself segfaults); vllm-project/vllm#4108 (an abort after a C++ exception)
    f, _ = first(tmp_path, "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f4ebf9d3740 (most recent call first):")
    assert f.id == "worker-segfault"
    f, report = first(tmp_path, "(RayWorkerVllm pid=7046) Fatal Python error: Aborted")
    assert "worker-segfault" not in [g.id for g in report.findings]


RECOMPILE_WARNING = [
    "W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8] torch._dynamo hit config.recompile_limit (8)",
    "W0110 12:27:06.332000 158 torch/_dynamo/convert_frame.py:1551] [2/8]    function: 'dion2_post_orthogonalize' "
    "(/usr/local/lib/python3.12/dist-packages/dion/dion2.py:621)",
]


def test_recompile_limit_under_fullgraph_is_a_compile_failure(tmp_path):
    # microsoft/dion#23 (1206.log): FailOnRecompileLimitHit does not end in "Error" and was not read at all
    f, report = first(tmp_path, "\n".join(RECOMPILE_WARNING + [
        "",
        "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True. Excessive recompilations "
        "can degrade performance due to the compilation overhead of each recompilation. To monitor recompilations, enable "
        "TORCH_LOGS=recompiles. If recompilations are expected, consider increasing torch._dynamo.config.cache_size_limit "
        "to an appropriate value.",
    ]))
    assert f.id == "torch-compile-failed"
    assert "recompile_limit reached with fullgraph=True" in f.summary
    assert "backend failed" not in f.summary  # it is dynamo's own stop, not the backend's


def test_the_recompile_limit_warning_alone_is_clean(tmp_path):
    # Lightning-AI/lightning-thunder#2682 (1205.log): the frame runs eagerly from then on, nothing failed
    f, report = first(tmp_path, "\n".join(RECOMPILE_WARNING))
    assert f is None and report.verdict == "clean"


WRAPPED_RECORD = [
    "iteration 5/50 | elapsed time per iteration: 21392.5 ms |",
    "learning rate: 1.350000E-04 | global batch size: 4096 |",
    "loss scale: 1.0 | grad norm: nan |",
    "number of skipped iterations: 0 | number of nan iterations: 0",
]


def test_megatron_record_broken_over_lines_is_read_whole(tmp_path):
    # NVIDIA-NeMo/Megatron-Bridge#5306 (1212.log): grad norm nan, loss dropped, nothing skipped -> a poisoned run
    f, _ = first(tmp_path, "\n".join(WRAPPED_RECORD))
    assert f.id in ("nan-persistent", "grad-norm-nonfinite")
    assert f.first_step == 5


def test_a_megatron_head_without_its_continuation_is_still_a_step(tmp_path):
    # the head alone (the rest of the record cut from the paste) is released at the end of the input: a step, no finding
    p = tmp_path / "job.log"
    p.write_text(WRAPPED_RECORD[0] + "\n", encoding="utf-8")
    steps = [e for e in api.events([str(p)]) if e.kind == "step"]
    assert [(e.step, e.loss) for e in steps] == [(5, None)]


READY_TWICE = ("RuntimeError: Expected to mark a variable ready only once. This error is caused by one of the following "
               "reasons: 1) Use of a module parameter outside the `forward` function. Please make sure model parameters are "
               "not shared across multiple concurrent forward-backward passes. or try to use _set_static_graph() as a "
               "workaround if this module graph does not change during training loop.2) Reused parameters in multiple "
               "reentrant backward passes. For example, if you use multiple `checkpoint` functions to wrap the same part of "
               "your model, it would result in the same set of parameters been used by different reentrant backward passes "
               "multiple times, and hence marking a variable ready multiple times. DDP does not support such use cases in "
               "default. You can try to use _set_static_graph() as a workaround if your module graph does not change over "
               "iterations.")


def test_ddp_parameter_ready_twice_is_named_with_its_rank(tmp_path):
    # modelscope/ms-swift#3171 (1220.log): reentrant gradient checkpointing under DDP
    f, report = first(tmp_path, "[rank3]: " + READY_TWICE)
    assert (f.id, f.initiating_rank) == ("ddp-param-ready-twice", 3)
    assert [g.id for g in report.findings] == ["ddp-param-ready-twice"]  # not also an uncaught exception
    assert "use_reentrant=False" in f.fix


def test_nccl_duplicate_gpu_warnings_under_mpirun_tags(tmp_path):
    # horovod/horovod#3929 (1222.log): every rank's NCCL init refuses a GPU another rank already uses
    f, _ = first(tmp_path, "\n".join([
        "[1,2]<stdout>:smc-gpu-03:29880:30398 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 1000",
        "[1,2]<stdout>:smc-gpu-03:29880:30398 [0] NCCL INFO init.cc:867 -> 5",
        "[1,4]<stdout>:smc-gpu-03:29882:30400 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 1000",
    ]))
    assert f.id == "nccl-duplicate-gpu"
    assert "Duplicate GPU" in f.summary and f.initiating_rank is None


def test_a_store_nobody_can_reach_is_reported_but_one_retry_is_not(tmp_path):
    # hpcaitech/Open-Sora#667 (1228.log): the E line comes after every address failed until the connect timeout;
    # pytorch/PiPPy#158: a lone W line is a connect attempt that is retried
    f, _ = first(tmp_path, "\n".join([
        "[W socket.cpp:697] [c10d] The client socket has failed to connect to 0.104.99.143:47389 (errno: 110 - Connection timed out).",
        "[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (6841231, 47389).",
    ]))
    assert f.id == "peer-connection-lost"
    f, report = first(tmp_path, "[W socket.cpp:558] [c10d] The client socket has failed to connect to [localhost]:29500 "
                                "(errno: 99 - Cannot assign requested address).")
    assert f is None and report.verdict == "clean"


def test_nccl_error_return_trace_without_a_warning(tmp_path):
    # NVIDIA/nccl#1099 (1232.log): socketPollConnect failed silently; only NCCL's "-> 2" trace shows it
    f, _ = first(tmp_path, "\n".join([
        "nd20-01:191191:219889 [0] NCCL INFO misc/socket.cc:564 -> 2",
        "nd20-01:191191:219889 [0] NCCL INFO bootstrap.cc:270 -> 2",
        "nd20-01:191191:219889 [0] NCCL INFO init.cc:1303 -> 2",
        "nd20-01:191191:219889 [0] NCCL INFO group.cc:64 -> 2 [Async thread]",
    ]))
    assert f.id == "nccl-error"
    assert "init.cc:1303 -> 2" in f.summary


def test_nccl_error_trace_after_a_warning_is_its_echo(tmp_path):
    # pytorch/pytorch#152780 (1204.log): the WARN names the CUDA failure; the trace after it adds nothing
    f, report = first(tmp_path, "\n".join([
        "[2025-05-04 23:32:59] Amphitrite:940929:940929 [1] enqueue.cc:1556 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'",
        "Amphitrite:940929:940929 [1] NCCL INFO group.cc:241 -> 1",
        "Amphitrite:940929:940929 [1] NCCL INFO group.cc:478 -> 1",
    ]))
    assert f.id == "cuda-illegal-memory-access"
    nccl = [g for g in report.findings if g.id == "nccl-error"]
    assert all("group.cc" not in m.events[0].text for g in nccl for m in g.matches)


def test_terminate_with_a_misaligned_address_is_the_kernel_fault(tmp_path):
    # a torchrun report (min_fa3_demo, public): the C++ exception that aborted the process (exit -6); a misaligned
    # address is cudaErrorMisalignedAddress, the illegal-address family (sample_logs/public/1809.log, 1810.log)
    f, _ = first(tmp_path, "terminate called after throwing an instance of 'c10::AcceleratorError'\n"
                           "  what():  CUDA error: misaligned address")
    assert f.id == "cuda-illegal-memory-access"
    assert "misaligned address" in f.summary


def test_uncorrectable_nvlink_error_is_a_hardware_fault(tmp_path):
    # pytorch/pytorch#58155 (1235.log)
    f, report = first(tmp_path, "\n".join([
        "terminate called after throwing an instance of 'std::system_error'",
        "  what():  Transport endpoint is not connected",
        "terminate called after throwing an instance of 'c10::Error'",
        "  what():  CUDA error: uncorrectable NVLink error detected during the execution",
    ]))
    assert f.id == "nvlink-error"
    assert report.verdict == "retryable"



def test_a_store_port_another_process_holds_is_named_with_the_port_not_as_an_exception(tmp_path):
    # intelligent-machine-learning/dlrover#443 (1851.log): env:// rendezvous on a taken MASTER_PORT
    f, report = first(tmp_path, "\n".join([
        "  File \"/usr/local/lib/python3.8/site-packages/torch/distributed/rendezvous.py\", line 177, in _create_c10d_store",
        "    return TCPStore(",
        "RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed "
        "to bind to [::]:44796 (errno: 98 - Address already in use). The server socket has failed to bind to "
        "0.0.0.0:44796 (errno: 98 - Address already in use).",
    ]))
    assert f.id == "port-in-use"
    assert "44796" in f.summary
    assert [x.id for x in report.findings] == ["port-in-use"]


def test_the_per_address_warnings_alone_name_the_taken_port(tmp_path):
    # hunto/DIST_KD#10 (1852.log): the paste ends before c10d's error line
    f, _ = first(tmp_path, "\n".join([
        "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 (errno: 98 - Address already in use).",
        "[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:25641 (errno: 98 - Address already in use).",
    ]))
    assert f.id == "port-in-use" and "25641" in f.summary


def test_a_client_that_timed_out_connecting_to_the_store_lost_its_peer(tmp_path):
    # lllyasviel/ControlNet#382 (1859.log): seconds, not the milliseconds of other releases
    f, report = first(tmp_path, "\n".join([
        "return TCPStore(",
        "TimeoutError: The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 48391).",
        "[E socket.cpp:793] [c10d] The client socket has timed out after 1800s while trying to connect to (127.0.0.1, 48391).",
    ]))
    assert f.id == "peer-connection-lost"
    assert "uncaught-exception" not in [x.id for x in report.findings]


def test_a_port_in_use_exception_wrapped_at_the_terminal_width_is_still_the_taken_port(tmp_path):
    # deepspeedai/DeepSpeed#3916 (1874.log): the words of the reason run over the wraps
    f, report = first(tmp_path, "\n".join([
        "RuntimeError: The server socket has failed to listen on any local network",
        "address. The server socket has failed to bind to [::]:29600 (errno: 98 - Address",
        "already in use). The server socket has failed to bind to 0.0.0.0:29600 (errno:",
        "98 - Address already in use).",
    ]))
    assert f.id == "port-in-use" and "29600" in f.summary
    assert [x.id for x in report.findings] == ["port-in-use"]


def test_an_nccl_detail_line_under_a_two_number_launcher_prefix_is_the_nccl_error_without_a_rank(tmp_path):
    # NVIDIA/nccl#1837 (1870.log): `[trainer0|0]:` says two numbers, not which is the rank
    f, _ = first(tmp_path, "\n".join([
        "[trainer3]:twshared1016:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2",
        "[trainer0|0]:ncclInternalError: Internal check failed.",
        "[trainer0|0]:Last error:",
        "[trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)",
    ]))
    assert f.id == "nccl-error"
    assert f.ranks == [] and f.initiating_rank is None


def test_a_monitored_barrier_names_the_rank_the_others_waited_for(tmp_path):
    # pytorch docs/source/distributed.rst (monitored_barrier): the error rank 0 prints, and gloo's lost peer after it
    f, report = first(tmp_path, "\n".join([
        "RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms",
        " Original exception:",
        "[gloo/transport/tcp/pair.cc:598] Connection closed by peer [2401:db00:eef0:1100:3560:0:1c05:25d]:8594",
    ]))
    assert f.id == "collective-timeout"
    assert f.initiating_rank == 1
    assert "uncaught-exception" not in [x.id for x in report.findings]


def test_a_watchdog_timeout_wrapped_at_the_terminal_width_is_still_a_timeout(tmp_path):
    # huggingface/open-r1#620 (a later comment than 1210.log): wrapped at 140 columns, mid-word
    f, _ = first(tmp_path, "\n".join([
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: "
        "[Rank 3] Watchdog caught colle",
        "ctive operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) "
        "ran for 1800011 millisecond",
        "s before timing out.",
    ]))
    assert f is not None and f.id == "collective-timeout"
