"""Serving failures users posted (sample_logs/public/2800-2819, session 13): TensorRT-LLM engines run in an MPI world
of another size, Ray Serve replicas the cluster has the resources for but never places and deployments serve status
marks UNHEALTHY, a vLLM Ray worker that died under the engine's logger. What a user reads first, that the generic
finding is replaced, that no rank is blamed for a check every rank makes, and that the healthy traps stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from nanscope import api
from tests.conftest import diagnose_lines, ids

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _report(name: str):
    return api.diagnose([str(PUBLIC / name)])


@pytest.mark.parametrize("name, expected", [
    ("2800.log", "tensorrt-llm-world-size-mismatch"),  # mpiSize == tp * pp, a 4-rank engine run as 1-2 processes
    ("2801.log", "tensorrt-llm-world-size-mismatch"),  # the same from ModelRunnerCppExecutor (TensorRT-LLM#1950)
    ("2802.log", "tensorrt-llm-world-size-mismatch"),  # optimum-nvidia: the exception line and C++ frames only
    ("2803.log", "tensorrt-llm-world-size-mismatch"),  # Triton's model table, the check wrapped onto the next row
    ("2804.log", "tensorrt-llm-world-size-mismatch"),  # the executor's kLEADER wording (TensorRT-LLM#2021)
    ("2805.log", "ray-serve-replica-unschedulable"),   # 'in application' wording, GPU 0.32 asked, 0.36 free
    ("2564.log", "ray-serve-replica-unschedulable"),   # one older-wording warning: 3 CPUs asked, 5.6 in the cluster
    ("2819.log", "ray-serve-replica-failed"),          # serve status: 'is UNHEALTHY: The Deployment failed to start'
    ("1317.log", "process-killed"),                    # ActorDiedError of RayWorkerWrapper under vLLM's core.py logger
    ("2806.log", "model-architecture-unsupported"),    # llama.cpp's timestamped log format, 'bailingmoe3'
    ("2814.log", "vllm-engine-dead"),                  # EngineDeadError under the 0.1x chat handler's logger path
    # round 2 (2820-2825), scored after the round-1 fixes
    ("2820.log", "tensorrt-llm-world-size-mismatch"),  # Triton's model_lifecycle 'failed to load' with the assertion
    ("2821.log", "tensorrt-llm-world-size-mismatch"),  # the ensemble's 'depends on tensorrt_llm which has no loaded version'
    ("2822.log", "parallel-size-exceeds-gpus"),        # 0.7-0.9's 'Number of GPUs per node 1 must be at least as large as TP (4)'
    ("2823.log", "parallel-size-exceeds-gpus"),        # the LLM API's 'Only 8 GPUs are available, but 16 are required.'
    ("2824.log", "ray-serve-replica-failed"),          # 2.5+'s DEPLOY_FAILED 'The deployment failed to start 3 times in a row'
])
def test_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]


@pytest.mark.parametrize("name, generic", [
    ("2800.log", "uncaught-exception"), ("2802.log", "uncaught-exception"), ("2803.log", "triton-model-load-failed"),
    ("2822.log", "triton-model-load-failed"), ("2823.log", "uncaught-exception"),
    ("1317.log", "uncaught-exception"), ("2819.log", "uncaught-exception"),
])
def test_the_specific_finding_replaces_the_generic_one(name, generic):
    assert generic not in ids(_report(name))


def test_the_world_size_finding_names_no_rank_and_says_what_to_start():
    f = _report("2803.log").findings[0]
    assert f.initiating_rank is None  # every rank (and Triton's one process) makes the same check
    assert "mpirun -n <tp*pp>" in f.fix and "--world_size" in f.fix


def test_the_sizes_are_read_when_the_release_prints_them(tmp_path):
    # NVIDIA/TensorRT-LLM#1992 (0.12's wording, the issue title) and #753 (0.6's Python runtime)
    r = diagnose_lines(tmp_path, ["RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 2 * PP size 1"])
    assert ids(r) == ["tensorrt-llm-world-size-mismatch"]
    assert "built for 2 rank(s)" in r.findings[0].summary and "MPI world of 1" in r.findings[0].summary
    r = diagnose_lines(tmp_path, ["AssertionError: Engine world size (2 * 1) != Runtime world size (1)"])
    assert ids(r) == ["tensorrt-llm-world-size-mismatch"]
    assert "built for 2 rank(s)" in r.findings[0].summary


def test_the_dead_ray_worker_keeps_the_engine_death_as_collateral():
    f = _report("1317.log").findings[0]
    assert [c.id for c in f.collateral] == ["vllm-engine-dead"]
    assert "ActorDiedError" in f.summary or "ActorDiedError" in " ".join(e.text for e in f.evidence)


def test_an_actor_whose_constructor_raised_is_no_kill(tmp_path):
    # Ray's other ActorDiedError wording (python/ray/exceptions.py): the actor's creation task raised, a Python error
    r = diagnose_lines(tmp_path, [
        "ERROR 05-06 14:20:15 [core.py:387] ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, ray::RayWorkerWrapper.__init__() (pid=1, ip=10.0.0.1)",
    ])
    assert "process-killed" not in ids(r)


def test_a_serve_deployment_marked_unhealthy_names_the_deployment():
    f = _report("2819.log").findings[0]
    assert "default_Fail" in f.summary and "3 times in a row" in f.summary


@pytest.mark.parametrize("name", ["2811.log", "2812.log", "2816.log", "2817.log", "2825.log"])
def test_healthy_serving_lines_stay_quiet(name):
    # a request vLLM's OpenAI server rejected (old and bracketed logger prefixes); generate()'s pad-token notice; a Serve
    # replica slow to initialize while its vLLM engine is configured
    assert _report(name).verdict == "clean", ids(_report(name))


def test_the_gpu_count_finding_says_how_many(tmp_path):
    f = _report("2823.log").findings[0]
    assert "needs 16 GPUs but this process sees 8" in f.summary and f.initiating_rank is None


def test_a_rejected_request_under_the_shortened_logger_path_stays_quiet(tmp_path):
    # vLLM 0.10+ prints the logger's file as a path under vllm/ shortened in the middle (the prefix of
    # vllm-project/vllm#41647); the message is serving_engine's _validate_input of vllm-project/vllm#16420
    prefix = "(APIServer pid=433) ERROR 05-04 08:51:40 [entrypoints/.../chat_completion/serving.py:1267] "
    r = diagnose_lines(tmp_path, [
        prefix + "Error in preprocessing prompt inputs",
        prefix + "Traceback (most recent call last):",
        prefix + "    raise ValueError(",
        prefix + "ValueError: This model's maximum context length is 2048 tokens. However, you requested 2054 tokens"
                 " (1030 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
    ])
    assert r.verdict == "clean", ids(r)


def test_the_engine_core_s_wait_for_its_workers(tmp_path):
    # vllm-project/vllm#44411: MultiprocExecutor.wait_for_ready's exception when a worker raised while it started
    r = diagnose_lines(tmp_path, [
        "(EngineCore pid=395145) ERROR 06-03 12:30:47 [core.py:1165]     raise e from None",
        "(EngineCore pid=395145) ERROR 06-03 12:30:47 [core.py:1165] Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.",
    ])
    assert ids(r) == ["vllm-engine-dead"]


@pytest.mark.parametrize("name, expected", [
    # round 3 (2826-2830), scored after the round-2 fixes
    ("2826.log", "vllm-engine-dead"),   # wait_for_ready's 'WorkerProc initialization failed ...' under the flat prefix
    ("2829.log", "process-killed"),     # SGLang's 'Rank 0 scheduler is dead' with 'Exit code: -9'
    ("2830.log", "vllm-startup-oom"),   # V1's _check_enough_kv_cache_memory: no memory for the cache blocks
])
def test_round_3_first_finding(name, expected):
    assert ids(_report(name))[:1] == [expected]
