"""Triton Inference Server (tritonserver): a model of the repository that did not load.

Triton logs through glog (`E0110 21:30:54.920681 60 model_lifecycle.cc:626] ...`); the level letter and
the file:line prefix stay in front of the message, so every rule searches.

Templates (triton-inference-server/core, triton-inference-server/server):
  core src/model_lifecycle.cc (older src/backends/.../model_repository_manager.cc) on a failed load:
      LOG_ERROR << "failed to load '" << model_name << "' version " << version << ": " << status.AsString();
      -> failed to load 'resnet' version 1: Internal: unable to create TensorRT engine
  core model_repository_manager.cc, a model named on --load-model that no repository has (core#244):
      failed to poll model 'dne': model not found in any model repository.
  core model_repository_manager.cc Poll, a model directory whose config or files cannot be read (a bad
  config.pbtxt, a stray directory such as `lost+found`, a file it cannot write for a load request; newer glog
  output quotes the message):
      LOG_ERROR << "Poll failed for model directory '" << child << "': " << status.Message();
      -> Poll failed for model directory 'ensemble_model': failed to read text proto from .../config.pbtxt
  server src/server.cc, the model status table printed once the repository is loaded:
      | resnet | 1       | UNAVAILABLE: Internal: unable to create TensorRT engine |
      (`READY` for a loaded model; `UNAVAILABLE: unloaded` for one unloaded on purpose, which is no failure)
  server src/main.cc when TRITONSERVER_ServerNew fails (by default --exit-on-error=true, so any model that
  failed to load stops the server):
      LOG_ERROR << "error: creating server: " << TRITONSERVER_ErrorCodeString(err) << " - " << message
      -> error: creating server: Internal - failed to load all models

The Python backend runs each model instance in a stub process (triton_python_backend_stub) that Triton talks
to through shared memory; when the stub stops answering (it crashed in the model's Python code or a compiled
extension, was OOM-killed, or /dev/shm is too small for its shared-memory region), python_backend's
src/python_be.cc says so:
      LOG_MESSAGE(TRITONSERVER_LOG_ERROR, "Stub process is unhealthy and it will be restarted.");   (<= 24.05)
      a request to that instance fails with "Stub process is not healthy." (the client sees `Failed to process
      the request(s) for model instance 'm_0', message: Stub process is not healthy.`); at load:
      "Stub process '<instance>' is not healthy." / stub_launcher.cc "Failed to initialize stub, stub process
      exited unexpectedly: <instance>"
A load that fails this way is also the model's load failure (the load rules claim those lines first).

A load failure whose reason is a CUDA out-of-memory is the cuda parser's (it runs first and claims the
line); the server's exit after a model's own failure is the same failure, not a second one.
"""

from __future__ import annotations

from typing import Optional

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "triton"


def _failed(rec, state, model: Optional[str], reason: Optional[str], how: str) -> list[ErrorEvent]:
    if not first_time(state, ("triton_load", model), rec.loc.line):
        return []  # the E line and the status table row of one model
    state["triton_model_failed"] = rec.loc.line
    if model is None:
        detail = "the server exited because a model of the repository failed to load (failed to load all models)"
    else:
        detail = f"model '{model}' did not load" + (f": {reason}" if reason else "")
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="triton_model_load_failed",
                       message=rec.text.strip(),
                       fields={"model": model, "reason": reason, "how": how, "detail": detail})]


@rule(
    "load-failed",
    ("failed to load '", "failed to poll model '", "Poll failed for model directory '"),
    r"failed to (?:load '(?P<model>[^']+)' version (?P<ver>-?\d+)|poll model '(?P<pmodel>[^']+)'): (?P<reason>.+)"
    r"|Poll failed for model directory '(?P<dir>[^']*)': (?P<dreason>[^\"]+)",
)
def _load_failed(m, rec, state):
    model = m.group("model") or m.group("pmodel") or m.group("dir")
    reason = m.group("reason") or m.group("dreason")
    return _failed(rec, state, model, reason.strip(), "load" if m.group("model") else "poll")


@rule(
    "status-row",
    ("UNAVAILABLE: ",),
    r"\|(?P<model>[^|]*)\|\s*(?P<ver>-?\d+)\s*\|\s*UNAVAILABLE: (?P<reason>[^|]*)\|",
)
def _status_row(m, rec, state):
    reason = m.group("reason").strip()
    if reason.startswith("unloaded"):
        return []  # unloaded on purpose (explicit model control), not a failure
    return _failed(rec, state, m.group("model").strip(), reason, "status table")


@rule(
    "server-exit",
    ("error: creating server:",),
    r"error: creating server: (?P<code>[A-Za-z][A-Za-z ]*?) - (?P<msg>failed to load all models)",
)
def _server_exit(m, rec, state):
    if state.get("triton_model_failed") is not None:
        return []  # the model that failed was named above
    return _failed(rec, state, None, None, "server exit")


@rule(
    "python-stub-unhealthy",
    ("Stub process is unhealthy and it will be restarted", "Stub process is not healthy",
     "Stub process '", "stub process exited unexpectedly"),
    r"(?P<restart>Stub process is unhealthy and it will be restarted)"
    r"|(?:model instance '(?P<inst>[^']+)', message: )?Stub process (?:'(?P<name>[^']+)' )?is not healthy"
    r"|Failed to initialize stub, stub process exited unexpectedly:? (?P<init>\S+)?",
)
def _python_stub(m, rec, state):
    inst = m.group("inst") or m.group("name") or m.group("init")
    if not first_time(state, ("triton_stub", inst), rec.loc.line):
        return []  # the restart notice and the requests that failed on the dead stub
    what = f" of {inst}" if inst else ""
    if m.group("restart"):
        detail = "a Python-backend stub process stopped answering; Triton restarts it (the requests in flight failed)"
    elif "initialize stub" in rec.text:
        detail = f"the Python-backend stub{what} exited while it started"
    else:
        detail = f"the Python-backend stub{what} is not healthy (the requests sent to it failed)"
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="triton_python_stub", message=rec.text.strip(),
                       fields={"instance": inst, "detail": detail})]


PARSER = Parser(
    name="triton",
    framework=FW,
    priority=40,
    description="Triton Inference Server: a model that failed to load, the server's exit after it",
    rules=[_load_failed, _status_row, _server_exit, _python_stub],
)
