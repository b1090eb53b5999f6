"""Lines of the tools on top of the frameworks (real; threads in sample_logs/public/README.md, cases 1000+) -> events.

TensorRT-LLM / TurboMind CUDA checks, detectron2's non-finite-loss check, the c10d heartbeat monitor,
Ray's dead-worker report, and a torch too old for torch.OutOfMemoryError that is not a host OOM.
"""

from __future__ import annotations

import math

import pytest

from nanscope import api
from nanscope.model import ErrorEvent, StepEvent


def events_of(tmp_path, text: str) -> list:
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return list(api.events([str(p)]))


def errors(tmp_path, text: str) -> list[ErrorEvent]:
    return [e for e in events_of(tmp_path, text) if isinstance(e, ErrorEvent)]


@pytest.mark.parametrize("line,runtime", [
    # triton-inference-server/tensorrtllm_backend#281
    ("Model 'tensorrt_llm' loading failed with error: version 1 is at UNAVAILABLE state: Internal: unexpected error "
     "when creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, "
     "mCudaStream->get()): out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)", "tensorrt-llm"),
    # NVIDIA/TensorRT-LLM#5950
    ("RuntimeError: Executor creation failed due to insufficient GPU memory.", "tensorrt-llm"),
    # InternLM/lmdeploy#3971 (its quoted form)
    ("[TM][ERROR] CUDA runtime error: out of memory /opt/lmdeploy/src/turbomind/core/allocator.cc:49", "turbomind"),
])
def test_inference_runtime_oom_is_a_cuda_oom(tmp_path, line, runtime):
    errs = [e for e in errors(tmp_path, line) if e.error == "cuda_oom"]
    assert len(errs) == 1 and errs[0].fields["runtime"] == runtime and errs[0].fields["detail"]
    report = api.diagnose([str(tmp_path / "job.log")])
    assert report.findings[0].id == "cuda-oom"


def test_another_runtime_cuda_error_is_not_an_oom(tmp_path):
    # triton-inference-server/tensorrtllm_backend#76
    line = ("[TensorRT-LLM][ERROR] Encountered an error in forward function: [TensorRT-LLM][ERROR] CUDA runtime error "
            "in ::cudaEventSynchronize(get()): an illegal memory access was encountered "
            "(/app/tensorrt_llm/cpp/include/tensorrt_llm/runtime/cudaEvent.h:66)")
    assert not [e for e in errors(tmp_path, line) if e.error == "cuda_oom"]


def test_detectron2_anomaly_check_is_a_nan_step(tmp_path):
    # facebookresearch/detectron2#838
    evs = events_of(tmp_path, "FloatingPointError: Loss became infinite or NaN at iteration=2137!")
    steps = [e for e in evs if isinstance(e, StepEvent)]
    assert len(steps) == 1 and steps[0].step == 2137 and math.isnan(steps[0].loss)
    report = api.diagnose([str(tmp_path / "job.log")])
    assert report.findings[0].id == "nan-persistent"


def test_heartbeat_monitor_abort(tmp_path):
    # kserve/kserve#3845
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 2 Rank 1] Heartbeat monitor timed out! Process will be "
            "terminated after dumping debug info. workMetaList_.size()=138\n"
            "[rank1]:[F ProcessGroupNCCL.cpp:1169] [PG 2 Rank 1] [PG 2 Rank 1] ProcessGroupNCCL's watchdog got stuck "
            "for 600 seconds without making progress in monitoring enqueued collectives.")
    aborts = [e for e in errors(tmp_path, text) if e.error == "watchdog_abort"]
    assert len(aborts) == 1 and aborts[0].fields["heartbeat"] is True  # the two lines are one abort
    report = api.diagnose([str(tmp_path / "job.log")])
    # the stuck watchdog is a hang no collective timeout reported (collective-timeout, parsers/nccl.py
    # heartbeat-stuck) and the monitor's abort of the process (nccl-watchdog-abort)
    assert [f.id for f in report.findings][:1] == ["collective-timeout"]
    assert "nccl-watchdog-abort" in {f.id for f in report.findings} | {c.id for f in report.findings for c in f.collateral}


def test_ray_dead_worker_is_a_killed_process(tmp_path):
    # ray-project/ray#47759
    text = ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
            "\tclass_name: RayTrainWorker\n"
            "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
            "Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root "
            "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.")
    assert [e.error for e in errors(tmp_path, text)] == ["killed"]  # the caller's exception and the raylet's exit type: one death
    report = api.diagnose([str(tmp_path / "job.log")])
    assert [f.id for f in report.findings] == ["process-killed"]


def test_missing_torch_oom_class_is_not_host_memory(tmp_path):
    # ultralytics/ultralytics#19917
    errs = errors(tmp_path, "[rank1]: AttributeError: module 'torch' has no attribute 'OutOfMemoryError'")
    assert errs and all(e.error != "host_oom" for e in errs)
