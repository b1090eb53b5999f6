"""Public cases the corpus missed at the start of session 18 (area `misses`), and the infrastructure round after them.

Task 1: Ollama's scheduler relays the runner's last stderr line from its `error loading model` prefix on
(ollama/ollama llm/status.go errorPrefixes), so llama.cpp's loader error reaches the CLI without
`llama_model_load: `: `llama runner process has terminated: error loading model: unable to allocate CUDA0 buffer`
is ggml's device-buffer OOM, and the older loader's `unable to allocate backend buffer` (llama.cpp's
llm_load_tensors, early 2024, no buffer type named) is the runner's failure, as no memory rule can say which
memory ran out.

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ids
from nanscope import api

PUBLIC = Path(__file__).resolve().parent.parent / "sample_logs" / "public"


def _diagnose_text(tmp_path: Path, text: str):
    p = tmp_path / "run.log"
    p.write_text(text, encoding="utf-8")
    return api.diagnose([str(p)])


@pytest.mark.parametrize("name, expected, rank", [
    ("4322.log", "ollama-runner-failed", None),  # ollama/ollama#5941: `unable to allocate backend buffer`
])
def test_task1_fixed_cases(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


def test_relayed_named_buffer_is_a_cuda_oom(tmp_path: Path) -> None:
    # ollama/ollama#11359 (the issue description)
    report = _diagnose_text(tmp_path, "Ollama call failed with status code 500: llama runner process has terminated: "
                                      "error loading model: unable to allocate CUDA0 buffer\n")
    assert ids(report) == ["cuda-oom"]


def test_relayed_unnamed_buffer_is_the_runner_failure_not_an_oom(tmp_path: Path) -> None:
    # ollama/ollama#5958 (the issue title)
    report = _diagnose_text(tmp_path, "Error: llama runner process has terminated: error loading model: "
                                      "unable to allocate backend buffer\n")
    assert ids(report) == ["ollama-runner-failed"]
    assert "backend buffer" in report.findings[0].summary


def test_ggml_own_line_with_the_unnamed_loader_error_stays_the_oom() -> None:
    # 4321.log (ollama/ollama#8597): cudaMalloc's line before the loader's: one cuda-oom
    report = api.diagnose([str(PUBLIC / "4321.log")])
    assert ids(report)[0] == "cuda-oom"
