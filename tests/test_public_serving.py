"""Serving-engine families first seen in the blind public cases 1300-1315 (vLLM, TGI): what a user who
pastes such a log gets as the first finding.

Every input is lines copied from the public thread named in the comment (the same excerpts are in
sample_logs/public with their provenance), cut to what the family needs.
"""

from __future__ import annotations

import pytest

from conftest import diagnose_lines, ids


def diagnose(tmp_path, lines: list[str]):
    return diagnose_lines(tmp_path, lines, "serve.log")


# vllm-project/vllm#19186: a V1 worker runs out of memory while it captures CUDA graphs at start-up
CAPTURE_OOM = [
    '(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]   File "/usr/local/lib/python3.10/site-packages/vllm/compilation/backends.py", line 681, in __call__',
    "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]     with torch.cuda.graph(cudagraph, pool=self.graph_pool):",
    '(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]   File "/usr/local/lib/python3.10/site-packages/torch/cuda/graphs.py", line 186, in __exit__',
    "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]     self.cuda_graph.capture_end()",
    '(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]   File "/usr/local/lib/python3.10/site-packages/torch/cuda/graphs.py", line 84, in capture_end',
    "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470]     super().capture_end()",
    "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470] RuntimeError: CUDA error: out of memory",
]


def test_an_oom_while_capturing_cuda_graphs_is_a_start_up_oom_on_that_worker(tmp_path):
    r = diagnose(tmp_path, CAPTURE_OOM)
    f = r.findings[0]
    assert (f.id, f.initiating_rank) == ("vllm-startup-oom", 3)
    assert "vllm-runtime-oom" not in ids(r)


def test_the_same_oom_without_the_start_up_frames_stays_a_serving_oom(tmp_path):
    # the OOM line alone (no traceback through the capture): nothing says it happened at start-up
    r = diagnose(tmp_path, CAPTURE_OOM[-1:])
    assert ids(r)[0] == "vllm-runtime-oom"


def test_a_start_up_frame_far_behind_the_oom_does_not_make_it_a_start_up_oom(tmp_path):
    # a capture frame from an earlier traceback, 400 lines of serving stats before the OOM
    # (the stats line is vllm-project/vllm#28926's, repeated)
    stats = ("(APIServer pid=1) INFO 11-18 06:44:41 [loggers.py:236] Engine 000: Avg prompt throughput: 1.9 tokens/s, "
             "Avg generation throughput: 0.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.5%, "
             "Prefix cache hit rate: 0.0%")
    r = diagnose(tmp_path, CAPTURE_OOM[4:5] + [stats] * 400 + CAPTURE_OOM[-1:])
    assert ids(r)[0] == "vllm-runtime-oom"


@pytest.mark.parametrize("line", [
    # LMCache/LMCache#3614: the CPU backend's KV cache does not fit in what the host has left
    "(Worker pid=1671) ERROR 06-09 16:29:44 [multiproc_executor.py:987] ValueError: Available memory on node 0 "
    "(149.11/692.65 GiB) on kv cache allocation is less than requested memory for kv (206.54/207.8 GiB). "
    "Reduce CPU memory used by other processes.",
    # the same check after the weights took the budget (negative room left), from a public vLLM CPU write-up
    "(Worker pid=18026) ERROR 06-13 19:57:36 [multiproc_executor.py:989] ValueError: Available memory on node 0 "
    "(4.66/18.0 GiB) on kv cache allocation is less than requested memory for kv (-0.39/3.6 GiB). "
    "Reduce CPU memory used by other processes.",
    # the later wording, with only the requested size (LMCache's CI log of vLLM's CPU worker)
    "(Worker pid=114) ERROR 08-14 08:34:03 [multiproc_executor.py:1018] ValueError: Available memory on node 0 "
    "(2.5/7.77 GiB) on kv cache allocation is less than requested memory for kv (12.0 GiB). Decrease "
    "--kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes.",
])
def test_the_cpu_backends_kv_cache_allocation_check_is_a_start_up_oom(tmp_path, line):
    r = diagnose(tmp_path, [line])
    assert ids(r) == ["vllm-startup-oom"]
    assert r.findings[0].matches[0].events[0].fields["reason"] == "kv_cache_allocation"


# vllm-project/vllm#23582: the engine core's read of its workers' replies times out
SHM_TIMEOUT = [
    '(EngineCore_0 pid=271) ERROR 08-25 12:29:17 [core.py:702]   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/shm_broadcast.py", line 469, in acquire_read',
    "(EngineCore_0 pid=271) ERROR 08-25 12:29:17 [core.py:702]     raise TimeoutError",
    "(EngineCore_0 pid=271) ERROR 08-25 12:29:17 [core.py:702] TimeoutError",
    "(EngineCore_0 pid=271) ERROR 08-25 12:29:17 [core.py:702] ",
    "(EngineCore_0 pid=271) ERROR 08-25 12:29:17 [core.py:702] The above exception was the direct cause of the following exception:",
]
# a vLLM V1 log with DP/TP/EP worker names (public debugging notes): collective_rpc's re-raise
RPC_TIMEOUT = [
    '(EngineCore_DP0 pid=16899) ERROR 11-25 12:06:16 [core.py:710]     raise TimeoutError(f"RPC call to {method} timed out.") from e',
    "(EngineCore_DP0 pid=16899) ERROR 11-25 12:06:16 [core.py:710] TimeoutError: RPC call to execute_model timed out.",
    "(Worker_DP0_TP1_EP1 pid=17313) INFO 11-25 12:06:16 [multiproc_executor.py:558] Parent process exited, terminating worker",
]
# vllm-project/vllm#35854: the engine waits minute after minute during a long start-up
SHM_WAITS = [
    "(EngineCore_DP0 pid=32350) INFO 03-03 17:05:48 [shm_broadcast.py:548] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).",
    "(EngineCore_DP0 pid=32350) INFO 03-03 17:06:48 [shm_broadcast.py:548] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).",
    "(EngineCore_DP0 pid=32350) INFO 03-03 17:07:48 [shm_broadcast.py:548] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization).",
]


def test_a_timed_out_read_of_the_workers_replies_is_an_rpc_timeout_with_no_rank(tmp_path):
    r = diagnose(tmp_path, SHM_TIMEOUT)
    f = r.findings[0]
    assert (f.id, f.initiating_rank) == ("vllm-rpc-timeout", None)
    assert "acquire_read" in f.summary


def test_collective_rpcs_re_raise_names_the_method(tmp_path):
    r = diagnose(tmp_path, RPC_TIMEOUT)
    assert ids(r)[0] == "vllm-rpc-timeout"
    assert "RPC call to execute_model timed out" in r.findings[0].summary


def test_the_waiting_messages_alone_are_no_finding(tmp_path):
    # a long compilation or weight quantization prints them too
    r = diagnose(tmp_path, SHM_WAITS)
    assert r.verdict == "clean", ids(r)


# huggingface/text-generation-inference#1067: the warm-up prefill does not fit
TGI_WARMUP = [
    '  File "/opt/conda/lib/python3.9/site-packages/text_generation_server/models/flash_causal_lm.py", line 755, in warmup',
    "    raise RuntimeError(",
    "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
    "",
    "2023-09-26T21:48:00.969072Z ERROR text_generation_launcher: Method Warmup encountered an error.",
]


def test_tgis_warm_up_that_does_not_fit_is_a_cuda_oom_with_the_prefill_budget(tmp_path):
    r = diagnose(tmp_path, TGI_WARMUP)
    assert ids(r) == ["cuda-oom"]  # not a generic uncaught exception
    assert "4096 tokens" in r.findings[0].summary and "--max-batch-prefill-tokens" in r.findings[0].summary


def test_the_routers_report_of_the_same_warm_up_is_a_cuda_oom(tmp_path):
    # the router's exit error, as in the title of huggingface/text-generation-inference#755
    r = diagnose(tmp_path, ['Error: Warmup(Generation("Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`"))'])
    assert ids(r) == ["cuda-oom"]


# vllm-project/vllm#13712: vLLM 0.7.3's engine core reports a failure as `EngineCore hit an exception`
HIT_AN_EXCEPTION = [
    "INFO 02-23 02:52:36 gpu_model_runner.py:1060] Loading model weights took 18.4209 GB",
    "ERROR 02-23 02:52:36 core.py:291] EngineCore hit an exception: Traceback (most recent call last):",
    'ERROR 02-23 02:52:36 core.py:291]   File "/home/user/miniconda3/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 283, in run_engine_core',
    "ERROR 02-23 02:52:36 core.py:291]     engine_core = EngineCoreProc(*args, **kwargs)",
]


def test_engine_core_hit_an_exception_is_a_dead_engine(tmp_path):
    r = diagnose(tmp_path, HIT_AN_EXCEPTION)
    assert ids(r) == ["vllm-engine-dead"]


def test_a_paste_that_lost_its_line_breaks_still_shows_the_time_out(tmp_path):
    # vllm-project/vllm#25387 pasted the engine core's traceback as one line (cut here at a process tag)
    line = ('(EngineCore_DP0 pid=142) ERROR 09-22 07:18:30 [core.py:710] File "/usr/local/lib/python3.12/dist-packages/'
            'vllm/distributed/device_communicators/shm_broadcast.py", line 469, in acquire_read (EngineCore_DP0 pid=142) '
            'ERROR 09-22 07:18:30 [core.py:710] raise TimeoutError (EngineCore_DP0 pid=142) ERROR 09-22 07:18:30 '
            '[core.py:710] TimeoutError (Worker pid=212) INFO 09-22 07:18:30 [multiproc_executor.py:558] Parent process '
            'exited, terminating worker (APIServer pid=1) ERROR 09-22 07:18:30 [async_llm.py:480] AsyncLLM output_handler '
            'failed.')
    assert ids(diagnose(tmp_path, [line]))[0] == "vllm-rpc-timeout"


# huggingface/text-generation-inference#1627: the shard dies of SIGILL while it starts (a CPU without AVX)
TGI_SIGILL = [
    "2024-03-06T17:53:22.336246Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
    "2024-03-06T17:53:31.052367Z ERROR shard-manager: text_generation_launcher: Shard complete standard error output:",
    " rank=0",
    "2024-03-06T17:53:31.052444Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to shutdown with signal 4 rank=0",
    "Error: ShardCannotStart",
    "2024-03-06T17:53:31.149443Z ERROR text_generation_launcher: Shard 0 failed to start",
    "2024-03-06T17:53:31.149481Z  INFO text_generation_launcher: Shutting down shards",
]


def test_a_tgi_shard_killed_by_a_signal_is_that_crash_on_that_shard(tmp_path):
    r = diagnose(tmp_path, TGI_SIGILL)
    f = r.findings[0]
    assert (f.id, f.initiating_rank) == ("worker-segfault", 0)
    assert "SIGILL" in f.summary
    assert "tgi-shard-failed" in ids(r) + [c.id for c in f.collateral]


def test_an_older_launchers_sigkill_line_without_a_rank_is_a_killed_process(tmp_path):
    # a public TGI thread (2023): the launcher before the shard-manager span printed no rank
    r = diagnose(tmp_path, [
        "2023-07-05T19:55:21.347050Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 9",
        "2023-07-05T19:55:21.362497Z ERROR text_generation_launcher: Shard 0 failed to start",
    ])
    assert ids(r)[0] == "process-killed"


@pytest.mark.parametrize("lines, exc_type", [
    # NVIDIA/TensorRT-LLM#2358: the executor fails a step on a CUDA error of its own C++ check
    (["[TensorRT-LLM][ERROR] Encountered an error in forwardAsync function: [TensorRT-LLM][ERROR] CUDA runtime error in "
      "cudaMemcpyAsync(dst, src.data(), src.getSizeInBytes(), cudaMemcpyDefault, mStream->get()): invalid argument "
      "(/workspace/tensorrt_llm/cpp/tensorrt_llm/runtime/bufferManager.cpp:146)",
      "1       0x7fbc549104df void tensorrt_llm::common::check<cudaError>(cudaError, char const*, char const*, int) + 143"],
     "CUDA runtime error"),
    # InternLM/lmdeploy#130: TurboMind's check throws and nothing catches it
    (["terminate called after throwing an instance of 'std::runtime_error'",
      "  what():  [FT][ERROR] CUDA runtime error: invalid argument /opt/tritonserver/lmdeploy/src/turbomind/utils/allocator.h:252 ",
      "",
      "Aborted (core dumped)"],
     "std::runtime_error"),
])
def test_an_inference_runtimes_cuda_error_is_reported_not_silent(tmp_path, lines, exc_type):
    r = diagnose(tmp_path, lines)
    assert ids(r) == ["uncaught-exception"]
    assert r.findings[0].summary.startswith(exc_type + ":")


def test_the_runtimes_out_of_memory_stays_a_cuda_oom(tmp_path):
    # InternLM/lmdeploy#2236
    r = diagnose(tmp_path, ["RuntimeError: [TM][ERROR] CUDA runtime error: out of memory /lmdeploy/src/turbomind/utils/memory_utils.cu:32"])
    assert ids(r) == ["cuda-oom"]


def test_a_tgi_shard_lost_while_serving_shows_in_the_launchers_exit_alone(tmp_path):
    # huggingface/text-generation-inference#2280: the excerpt keeps only the shutdown and the exit
    r = diagnose(tmp_path, [
        "2024-07-22T19:57:05.908774Z  INFO shard-manager: text_generation_launcher: shard terminated rank=3",
        "2024-07-22T19:57:06.504541Z  INFO shard-manager: text_generation_launcher: shard terminated rank=2",
        "Error: ShardFailed",
    ])
    assert ids(r) == ["tgi-shard-failed"]
    assert "crashed while serving" in r.findings[0].summary


def test_tgis_router_panic_is_reported_with_where_it_panicked(tmp_path):
    # huggingface/text-generation-inference#1795
    r = diagnose(tmp_path, [
        "thread 'tokio-runtime-worker' panicked at /usr/src/router/src/server.rs:180:45:",
        "byte index 1000 is not a char boundary; it is inside '你' (bytes 999..1002) of `<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|> # Safety Preamble",
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "2024-04-23T08:26:48.209311Z ERROR text_generation_launcher: Webserver Crashed",
    ])
    assert ids(r) == ["uncaught-exception"]
    assert "server.rs:180:45" in r.findings[0].summary


def test_a_worker_that_failed_to_start_is_a_dead_engine_on_that_worker(tmp_path):
    # a public vLLM report (a disaggregated-prefill setup), cut before the worker's exception
    r = diagnose(tmp_path, [
        "(VllmWorker rank=0 pid=1110) ERROR 08-26 12:16:15 [multiproc_executor.py:492] WorkerProc failed to start.",
        "(VllmWorker rank=0 pid=1110) ERROR 08-26 12:16:15 [multiproc_executor.py:492] Traceback (most recent call last):",
    ])
    f = r.findings[0]
    assert (f.id, f.initiating_rank) == ("vllm-engine-dead", 0)
