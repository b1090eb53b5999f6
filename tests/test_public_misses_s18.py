"""Public cases the corpus missed at the start of session 18 (area `misses`), and the infrastructure round after them.

Task 1: Ollama's scheduler relays the runner's last stderr line from its `error loading model` prefix on
(ollama/ollama llm/status.go errorPrefixes), so llama.cpp's loader error reaches the CLI without
`llama_model_load: `: `llama runner process has terminated: error loading model: unable to allocate CUDA0 buffer`
is ggml's device-buffer OOM, and the older loader's `unable to allocate backend buffer` (llama.cpp's
llm_load_tensors, early 2024, no buffer type named) is the runner's failure, as no memory rule can say which
memory ran out.

Round 1 (4339-): infrastructure failures. runc's `container init was OOM-killed (memory limit too low?)`
(libcontainer/process_linux.go, relayed by the kubelet) is a cgroup OOM at container start (host-oom);
TensorFlow 1.x's CheckpointSaverHook line `Saving checkpoints for N into PATH.` followed by the op kernel's
`OP_REQUIRES failed at save_restore_v2_ops.cc:L : <status>` is that save failing (checkpoint-save-failed at step N).
Round 2 (4347-): torch/csrc/serialization.cpp doRead's `read(): fd N failed with Stale file handle` under torch.load is
stale-file-handle, not a corrupt checkpoint.
Left: s3fs's `AccessDenied` on CreateMultipartUpload with no checkpoint frame in view (4341, uncaught-exception).

Inputs are the public excerpts (sample_logs/public, provenance in its MANIFEST.toml) or lines copied verbatim
from the thread named in the comment (or, where the comment says so, built from the framework's template).
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


@pytest.mark.parametrize("name, expected, rank", [
    ("4339.log", "host-oom", None),  # the memory cgroup's OOM kill in dmesg (ymoslem/OpenNMT-Tutorial#6)
    ("4340.log", "process-killed", None),  # `Killed` after the first epoch header
    ("4341.log", "uncaught-exception", None),  # s3fs AccessDenied, no checkpoint frame in view: left
    ("4342.log", "checkpoint-save-failed", None),  # TF's S3 checkpoint save failing after the hook's line
    ("4343.log", "dataloader-worker-killed", None),  # /dev/shm bus error with the shm line
    ("4345.log", "host-oom", None),  # runc: container init OOM-killed, via the kubelet
    ("4346.log", "dataloader-worker-killed", None),  # the bus error line alone
])
def test_round_1_first_failure(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


def test_round_1_tf_save_failure_takes_the_hook_step() -> None:
    report = api.diagnose([str(PUBLIC / "4342.log")])
    assert report.findings[0].first_step == 7200


@pytest.mark.parametrize("name", ["4344.log"])
def test_round_1_healthy_runs_stay_clean(name: str) -> None:
    # the NGC container's 64 MB SHMEM banner is advice (awslabs/benchmark-ai#17)
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_tf_restore_failure_after_a_save_is_not_a_failed_save(tmp_path: Path) -> None:
    # the hook's save, then the Saver restoring (saver.py `Restoring parameters from %s`) and RestoreV2 failing
    # (the restore line is tensorflow's template; the failing op line is arita37/mlmodels' CI log)
    report = _diagnose_text(tmp_path, "INFO:tensorflow:Saving checkpoints for 0 into model/model.ckpt.\n"
                                      "INFO:tensorflow:Restoring parameters from model/model.ckpt-0\n"
                                      "2020-05-18 10:16:20.560931: W tensorflow/core/framework/op_kernel.cc:1651] "
                                      "OP_REQUIRES failed at save_restore_v2_ops.cc:184 : Not found: Key Variable not "
                                      "found in checkpoint\n")
    assert "checkpoint-save-failed" not in ids(report)


def test_tf_save_failure_with_the_status_on_the_next_line(tmp_path: Path) -> None:
    # a console that wrapped the op kernel's line after ` :` (the status on the next line)
    report = _diagnose_text(tmp_path, "I0609 06:22:50.961521  3404 basic_session_run_hooks.py:634] Saving checkpoints "
                                      "for 0 into ./models/model.ckpt.\n"
                                      "2022-06-09 06:22:52.780440: W tensorflow/core/framework/op_kernel.cc:1745] "
                                      "OP_REQUIRES failed at save_restore_v2_ops.cc:110 :\n")
    assert ids(report)[:1] == ["checkpoint-save-failed"]


def test_rlpyt_diagnostics_prefix_placeholder_stays_quiet(tmp_path: Path) -> None:
    # juliusfrost/dreamer-pytorch#52 (rlpyt >= 2020-04 writes its runner rows under tabular_prefix('Diagnostics/')):
    # no update yet (CumUpdates 0), so the nan row is record_tabular_misc_stat's placeholder (the loss row is the
    # template's, as 2741.log prints it)
    report = _diagnose_text(tmp_path, "2020-04-22T20:42:55.6597590Z 2020-04-22 20:42:54.227099  | Diagnostics/Iteration            9\n"
                                      "2020-04-22T20:42:55.6599470Z 2020-04-22 20:42:54.227582  | Diagnostics/CumUpdates           0\n"
                                      "2020-04-22T20:42:55.6599470Z 2020-04-22 20:42:54.227600  | model_loss/Average              nan\n")
    assert ids(report) == []


def test_rlpyt_diagnostics_prefix_after_updates_is_a_nan(tmp_path: Path) -> None:
    # built from rlpyt's template (minibatch_rl.py log_diagnostics, 'Diagnostics/' prefix) and 2741.log's loss row:
    # updates ran (CumUpdates > 0), so a nan Average is a NaN loss
    report = _diagnose_text(tmp_path, "2020-12-08 21:40:45.481000  | Diagnostics/Iteration            2999\n"
                                      "2020-12-08 21:40:45.481100  | Diagnostics/CumUpdates           100\n"
                                      "2020-12-08 21:40:45.483178  | model_loss/Average              nan\n"
                                      "2020-12-08 21:42:45.481000  | Diagnostics/Iteration            3999\n"
                                      "2020-12-08 21:42:45.481100  | Diagnostics/CumUpdates           200\n"
                                      "2020-12-08 21:42:45.483178  | model_loss/Average              nan\n")
    assert ids(report)[:1] == ["nan-persistent"]
    assert report.findings[0].first_step == 2999


@pytest.mark.parametrize("name, expected, rank", [
    ("4347.log", "stale-file-handle", None),  # taiyaki's open log file on NFS (nanoporetech/taiyaki#66)
    ("4348.log", "stale-file-handle", None),  # torch.load's `read(): fd 33 failed with Stale file handle`
    ("4349.log", "host-oom", 0),  # srun task 0; slurmstepd's oom-kill event, srun's Out Of Memory
    ("4350.log", "pod-evicted", None),  # the kubelet's newer ephemeral-storage wording
    ("4351.log", "pod-evicted", None),  # a pod status in YAML, the message wrapped
    ("4353.log", "pod-evicted", None),  # a listing of Evicted pods
])
def test_round_2_first_failure(name: str, expected: str, rank) -> None:
    report = api.diagnose([str(PUBLIC / name)])
    assert ids(report)[0] == expected
    assert report.findings[0].initiating_rank == rank


@pytest.mark.parametrize("name", ["4352.log"])
def test_round_2_healthy_runs_stay_clean(name: str) -> None:
    # finished Jobs' pods: 0/1 READY, STATUS Completed (kubernetes/kubernetes#22795)
    assert ids(api.diagnose([str(PUBLIC / name)])) == []


def test_torch_write_eio_is_not_a_stale_handle() -> None:
    # 1416.log (pytorch/pytorch#10577): the same doWrite template with EIO stays the checkpoint save failure
    report = api.diagnose([str(PUBLIC / "1416.log")])
    assert "stale-file-handle" not in ids(report)
