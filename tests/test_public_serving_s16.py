"""Serving engines, session 16's blind public rounds (4300-): vLLM's tool-calling refusals (a parser name the
release lacks, a server started without --enable-auto-tool-choice that an agent's client gets 400s from, a parser
whose tokens the model lacks), an attention backend that cannot apply Gemma 2's logit soft-capping, a TensorRT-LLM
plugin that cannot read its fields back from an engine of another version. Each is named by its own class instead
of a generic uncaught exception or nothing.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim from
the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import diagnose_lines, ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


# round 1 (4300-4309), scored blind before any change
@pytest.mark.parametrize("name, expected", [
    ("4300.log", "tool-calling-misconfigured"),  # vllm recipes#51: KeyError 'invalid tool call parser: openai'
    ("4301.log", "cli-argument-invalid"),  # GLM-V#144: argparse's invalid choice for --tool-call-parser
    ("4302.log", "vllm-kv-cache-too-small"),  # bonito#7
    ("4303.log", "chat-template-missing"),  # LongWriter#39
    ("4304.log", "tool-calling-misconfigured"),  # OpenManus#3: the agent's client gets the 400 and raises
    ("4305.log", "tool-calling-misconfigured"),  # QwenPaw#1449: the same, 'invalid_request_error' wording
    ("4306.log", "attention-softcap-unsupported"),  # vllm#8660: Torch SDPA on the CPU backend, Gemma 2
    ("4307.log", "tensorrt-engine-incompatible"),  # tensorrtllm_backend#191: d == a + length in the attention plugin
])
def test_round_1_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


@pytest.mark.parametrize("name", ["4308.log", "4309.log"])
def test_round_1_healthy_startups_stay_clean(name: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_the_unknown_parser_is_named_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "4300.log")]).findings[0].summary
    assert "--tool-call-parser openai" in summary


def test_the_refused_backend_is_named_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "4306.log")]).findings[0].summary
    assert "Torch SPDA" in summary


def test_a_quoted_raise_of_the_softcap_message_is_no_finding(tmp_path) -> None:
    # the raise's source line, as a traceback prints it (vllm/attention/backends/torch_sdpa.py)
    lines = ['  File "/usr/local/lib/python3.10/dist-packages/vllm/attention/backends/torch_sdpa.py", line 419, in __init__',
             '    raise ValueError("Torch SPDA does not support logits soft cap.")']
    assert ids(diagnose_lines(tmp_path, lines)) == []


def test_the_flash_attention_build_without_softcap_is_named(tmp_path) -> None:
    # vllm-project/vllm#25502's wording (Dao-AILab/flash-attention hopper/flash_api.cpp)
    line = ("(EngineCore_DP0 pid=269) ERROR 09-23 10:50:04 [core.py:720] RuntimeError: This flash attention build "
            "does not support tanh softcapping.")
    assert ids(diagnose_lines(tmp_path, [line])) == ["attention-softcap-unsupported"]


def test_the_hermes_parser_without_its_tokens_is_tool_calling(tmp_path) -> None:
    # vllm-project/vllm#9304's title: the parser's tokens are not in glm-4 / MiniCPM3 / Llama 3.1's vocabulary
    line = "RuntimeError: Hermes 2 Pro Tool parser could not locate tool call start/end tokens in the tokenizer!"
    assert ids(diagnose_lines(tmp_path, [line])) == ["tool-calling-misconfigured"]


# round 2 (4310-4315), scored blind after the round-1 fixes
@pytest.mark.parametrize("name, expected", [
    ("4310.log", "tool-calling-misconfigured"),  # sglang#9102: 'Unsupported tool_call_parser: None' in its traceback
    ("4311.log", "tool-calling-misconfigured"),  # Roo-Code#10259: the same message in an agent's 500
    ("4312.log", "cli-argument-invalid"),  # sgl-project.github.io#17: argparse refusing 'llama4'
    ("4313.log", "attention-softcap-unsupported"),  # vllm#7060: 'Please use Flashinfer backend for models with ...'
    ("4314.log", "attention-softcap-unsupported"),  # vllm#6218: 0.5.1's 'withlogits_soft_cap' in the worker, ROCm
])
def test_round_2_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_round_2_gemma2_loading_with_flashinfer_stays_clean() -> None:
    assert ids(api.diagnose([str(PUBLIC / "4315.log")])) == []


def test_sglang_without_a_parser_says_the_flag_is_missing() -> None:
    summary = api.diagnose([str(PUBLIC / "4310.log")]).findings[0].summary
    assert "SGLang" in summary and "--tool-call-parser" in summary


def test_sglangs_quoted_raise_is_no_finding(tmp_path) -> None:
    # python/sglang/srt/function_call/function_call_parser.py, as a traceback's source line shows it
    assert ids(diagnose_lines(tmp_path, ['    raise ValueError(f"Unsupported tool_call_parser: {tool_call_parser}")'])) == []


# round 3 (4320-4322), scored blind after the round-2 fixes
@pytest.mark.parametrize("name, expected", [
    ("4320.log", "kv-cache-blocks-exhausted"),  # TGI#1356: the router relaying the shard's block allocator
    ("4321.log", "cuda-oom"),  # ollama#8597: cudaMalloc of 45 GB on an L40S, the CUDA0 buffer
])
def test_round_3_failure_is_named_by_its_class(name: str, expected: str) -> None:
    assert ids(api.diagnose([str(PUBLIC / name)])) == [expected]


def test_the_blocks_asked_and_free_are_in_the_summary() -> None:
    summary = api.diagnose([str(PUBLIC / "4320.log")]).findings[0].summary
    assert "107" in summary and "only 4" in summary
