"""torchrun agent lines, checkpoint writes, DDP / dynamo / anomaly-mode / precision exceptions -> events.

Lines copied from the public threads in sample_logs/public/MANIFEST.toml (the source named per case)
and from the templates in torch / transformers / accelerate / safetensors source.
"""

from __future__ import annotations

import pytest

from nanscope import api
from nanscope.model import ErrorEvent


def errors(tmp_path, text: str) -> list[ErrorEvent]:
    p = tmp_path / "job.log"
    p.write_text(text + "\n", encoding="utf-8")
    return [e for e in api.events([str(p)]) if isinstance(e, ErrorEvent)]


@pytest.mark.parametrize("line, signal", [
    # torch >= 2.2, glog header (modelscope/ms-swift#5884)
    ("W0920 09:10:41.194000 84933 site-packages/torch/distributed/elastic/agent/server/api.py:719] "
     "Received 1 death signal, shutting down workers", "SIGHUP"),
    # torch 1.x logging format behind a Determined prefix
    ("[2024-02-27T21:35:32.106313Z] fa88a9df || WARNING: torch.distributed.elastic.agent.server.api:"
     "Received 15 death signal, shutting down workers", "SIGTERM"),
    # newest torch prints the Signals enum
    ("W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] "
     "Received Signals.SIGTERM death signal, shutting down workers", "SIGTERM"),
])
def test_agent_death_signal(tmp_path, line, signal):
    [e] = errors(tmp_path, line)
    assert (e.error, e.signal, e.rank) == ("signal_received", signal, None)


def test_child_failed_entry_without_section_header(tmp_path):
    # pytorch/pytorch thread in sample_logs/public/304.log: the excerpt starts at the entry's rank row
    [e] = errors(tmp_path, "  rank      : 0 (local_rank: 0)\n  exitcode  : -11 (pid: 6421)\n  error_file: <N/A>\n"
                           "  traceback : Signal 11 (SIGSEGV) received by PID 6421")
    assert (e.error, e.rank, e.signal, e.exitcode) == ("child_failed", 0, "SIGSEGV", -11)


def test_agent_failed_torch_2_1_format(tmp_path):
    [e] = errors(tmp_path, "[2024-05-28 14:04:28,584] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                           "(exitcode: 1) local_rank: 2 (pid: 60554) of binary: /opt/conda/bin/python")
    assert (e.error, e.exitcode, e.rank) == ("worker_failed", 1, 2)


def test_agent_failed_behind_an_srun_label_names_the_node_not_a_rank(tmp_path):
    """srun --label with one torchrun agent per node (sample_logs/multinode/debug_detail_segv.log):
    `1: ` is node 1's agent, and its local_rank 0 is not global rank 1 (it is rank 2 there)."""
    [e] = errors(tmp_path, "1: E1201 09:58:28.141000 26047 torch/distributed/elastic/multiprocessing/api.py:1002] "
                           "failed (exitcode: -11) local_rank: 0 (pid: 26155) of binary: /venv/bin/python3")
    assert (e.error, e.signal, e.rank) == ("worker_failed", "SIGSEGV", None)
    assert (e.origin.node, e.origin.local_rank, e.fields["local_rank"]) == ("node1", 0, 0)


@pytest.mark.parametrize("text, cause", [
    ("RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file data/0: "
     "file write failed", "write_failed"),
    ("RuntimeError: [enforce fail at inline_container.cc:337] . unexpected pos 11347827264 vs 11347827160", "short_write"),
    ('Traceback (most recent call last):\n  File "/opt/conda/lib/python3.7/site-packages/torch/serialization.py", '
     'line 379, in save\n    _save(obj, opened_zipfile, pickle_module, pickle_protocol)\n'
     'OSError: [Errno 28] No space left on device', "disk_full"),
])
def test_checkpoint_save_failures(tmp_path, text, cause):
    [e] = errors(tmp_path, text)
    assert (e.error, e.fields["cause"]) == ("checkpoint_save_failed", cause)


def test_enospc_outside_a_save_is_only_a_full_disk(tmp_path):
    [e] = errors(tmp_path, "OSError: [Errno 28] No space left on device")
    assert e.error == "disk_full"


def test_loading_a_truncated_checkpoint_is_still_corrupt(tmp_path):
    [e] = errors(tmp_path, "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory")
    assert e.error == "checkpoint_corrupt"


@pytest.mark.parametrize("line, kind", [
    ("ValueError: Your setup doesn't support bf16/gpu.", "dtype_unsupported"),
    ("ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
     "dtype_unsupported"),
    ("ValueError: fp16 mixed precision requires a GPU", "dtype_unsupported"),
    ("ValueError: fp16 mixed precision requires a GPU (not 'mps').", "dtype_unsupported"),
    ("RuntimeError: DDP expects same model across all ranks, but Rank 3 has 2247 params, while rank 0 has "
     "inconsistent 0 params.", "ddp_param_mismatch"),
])
def test_exception_kinds(tmp_path, line, kind):
    [e] = errors(tmp_path, line)
    assert e.error == kind


def test_ddp_unused_parameters_takes_the_rank_from_the_debug_lines(tmp_path):
    [e] = errors(tmp_path, "RuntimeError: Expected to have finished reduction in the prior iteration before starting "
                           "a new one. This error indicates that your module has parameters that were not used in "
                           "producing loss.\nParameter indices which did not receive grad for rank 3: 282 283")
    assert (e.error, e.rank) == ("ddp_unused_parameters", 3)


def test_backend_compiler_failed_carries_the_inner_exception(tmp_path):
    [e] = errors(tmp_path, "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                           "ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler'")
    assert e.error == "compile_failed" and "ImportError" in e.message


def test_dynamo_warning_fallback(tmp_path):
    [e] = errors(tmp_path, "[01:17:10.938]: W1024 01:17:10.936000 140404233111360 torch/_dynamo/convert_frame.py:1009] "
                           "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                           "[01:17:10.938]: W1024 01:17:10.936000 140404233111360 torch/_dynamo/convert_frame.py:1009] "
                           "NameError: name 's4' is not defined")
    assert e.error == "compile_failed" and e.fields["fallback"] and "NameError" in e.message


def test_anomaly_warning_alone_names_the_op(tmp_path):
    [e] = errors(tmp_path, "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py:200: UserWarning: Error "
                           "detected in SoftmaxBackward0. Traceback of forward call that caused the error:")
    assert (e.error, e.fields["op"]) == ("nan_op", "SoftmaxBackward0")


def test_anomaly_warning_before_another_error_is_not_nan(tmp_path):
    evs = errors(tmp_path, "/venv/lib/python3.11/site-packages/torch/autograd/graph.py:768: UserWarning: Error detected "
                           "in CudnnRnnBackward0. Traceback of forward call that caused the error:\n"
                           "RuntimeError: one of the variables needed for gradient computation has been modified by an "
                           "inplace operation")
    # the exception says what went wrong (an in-place modification); the warning only names the backward op
    assert [e.error for e in evs] == ["autograd_inplace"]
    assert evs[0].fields["op"] == "CudnnRnnBackward0"


@pytest.mark.parametrize("text, kind", [
    # TCPStore master, first wording (pytorch/pytorch#111805) and the current one (OpenRLHF/OpenRLHF#1040 title)
    ("creating store\ntorch.distributed.DistStoreError: Timed out after 6 seconds waiting for workers. "
     "1/2 workers joined.", "collective_timeout"),
    ("torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/3 clients joined.",
     "collective_timeout"),
    # the store cannot be reached (vllm-project/vllm#19670 title)
    ("torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to "
     "connect to (172.17.0.9, 46229).", "peer_connection_lost"),
])
def test_rendezvous_store_failures(tmp_path, text, kind):
    [e] = errors(tmp_path, text)
    assert (e.error, e.rank) == (kind, None)


@pytest.mark.parametrize("text, kind, exc", [
    # facebookresearch/av_hubert#19: torch 1.x logger name, empty message
    ('ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n  "message": {\n'
     '    "message": "RendezvousTimeoutError: ",\n    "extraInfo": {', "collective_timeout", "RendezvousTimeoutError"),
    # pytorch/pytorch#64926: the agent's own log format
    ('[ERROR] 2021-09-13 22:18:26,678 error_handler: {\n  "message": {\n    "message": "RendezvousConnectionError: '
     'The connection to the C10d store has failed. See inner exception for details.",',
     "peer_connection_lost", "RendezvousConnectionError"),
])
def test_elastic_error_handler_json(tmp_path, text, kind, exc):
    [e] = errors(tmp_path, text)
    assert (e.error, e.exc_type, e.rank) == (kind, exc, None)


def test_a_json_message_outside_the_error_handler_is_no_error(tmp_path):
    # an API response or config dump with an "...Error: " message string is not the agent failing
    assert errors(tmp_path, '{\n  "message": "ValueError: bad request",\n}') == []
