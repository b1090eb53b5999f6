"""Training stacks thin in the corpus, second stacks helper of session 14 (3630-3699): PaddlePaddle's and MXNet's
GPU allocators out of memory, JAX's RESOURCE_EXHAUSTED, MindSpore NaN losses, MosaicML Composer's launcher naming a
rank a signal ended; a MindYOLO run with a loss-scale overflow notice as a healthy trap. Each is named by its own
class instead of a generic uncaught exception (or nothing).

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim from
the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


@pytest.mark.parametrize("name, expected", [
    # round 4 (3630-3638), the first round of this helper
    ("3630.log", "cuda-oom"),  # Paddle: `RuntimeError: ResourceExhaustedError:` then the allocator's message
    ("3631.log", "cuda-oom"),  # Paddle: operator.cc's BadAlloc warning, the message on the lines after
    ("3632.log", "cuda-oom"),  # Paddle DeepSpeech2, the same warning cut after the out-of-memory line
    ("3633.log", "cuda-oom"),  # MXNet: mxnet.base.MXNetError from pooled_storage_manager.h
    ("3634.log", "cuda-oom"),  # MXNet: dmlc's fatal log of the same, no Python exception
    ("3635.log", "cuda-oom"),  # JAX: XlaRuntimeError RESOURCE_EXHAUSTED with the buffer assignment's stats
    ("3636.log", "nan-persistent"),  # MindYOLO: every step's loss nan, MindSpore's overflow warning at each
    ("3638.log", "worker-segfault"),  # Composer's launcher: rank 2 ended by SIGBUS (-7)
])
def test_failure_is_named_by_its_class_not_a_generic_exception(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


@pytest.mark.parametrize("name", ["3637.log"])
def test_healthy_runs_of_the_round_stay_clean(name: str) -> None:
    # MindSpore's dynamic loss scaler logging one overflow among finite, steady losses
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_paddles_oom_is_one_finding_with_its_numbers() -> None:
    report = api.diagnose([str(PUBLIC / "3630.log")])
    assert ids(report) == ["cuda-oom"]
    summary = report.findings[0].summary
    assert "98.0 MiB" in summary and "GPU 0" in summary and "6.00 GiB allocated" in summary


def test_paddle_18s_wording_without_the_allocated_amount(tmp_path) -> None:
    # paddle/fluid/memory/allocation/cuda_allocator.cc of Paddle 1.8: no `%s memory has been allocated and `
    lines = ["Out of memory error on GPU 1. Cannot allocate 1.531250GB memory on GPU 1, available memory is only 416.625000MB."]
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["cuda-oom"] and "GPU 1" in report.findings[0].summary


def test_mxnets_retry_under_the_ffi_traceback(tmp_path) -> None:
    # MXNet 1.6+'s FFI traceback (an efficientdet-mxnet user's paste): the message on its own line after the frame
    lines = ["mxnet.base.MXNetError: Traceback (most recent call last):",
             '  File "c:\\jenkins\\workspace\\mxnet-tag\\mxnet\\src\\storage\\./pooled_storage_manager.h", line 161',
             "MXNetError: cudaMalloc retry failed: out of memory"]
    report = diagnose_lines(tmp_path, lines)
    assert ids(report) == ["cuda-oom"] and "even after releasing its pool" in report.findings[0].summary


def test_ggmls_cudamalloc_line_is_not_read_as_mxnet(tmp_path) -> None:
    line = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: cudaMalloc failed: out of memory"
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["cuda-oom"] and "MXNet" not in report.findings[0].summary


def test_composers_rank_is_the_initiating_rank() -> None:
    finding = api.diagnose([str(PUBLIC / "3638.log")]).findings[0]
    assert finding.initiating_rank == 2 and "SIGBUS" in finding.summary


def test_composers_global_rank_exit_line(tmp_path) -> None:
    # mosaicml/llm-foundry#1501's title: _aggregate_process_returncode's line
    line = "ERROR:composer.cli.launcher:Global rank 0 (PID 208865) exited with code -11"
    report = diagnose_lines(tmp_path, [line])
    assert ids(report) == ["worker-segfault"] and report.findings[0].initiating_rank == 0


def test_composers_rank_with_status_1_is_its_exception(tmp_path) -> None:
    # mosaicml/examples#292: a rank that raised; its traceback went to the rank's own stderr file
    line = "ERROR:composer.cli.launcher:Rank 1 crashed with exit code 1."
    assert ids(diagnose_lines(tmp_path, [line])) == ["uncaught-exception"]
