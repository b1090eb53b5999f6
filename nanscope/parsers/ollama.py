"""Ollama: its own memory check refusing a model, a model runner that died or never came up, a model name that resolves
to nothing.

Memory check: a model that needs more host memory than the machine has.

Before it starts a runner, Ollama's scheduler (llm/server.go, every release from 0.1.3x to 0.20) estimates
the memory the model needs outside the GPUs and refuses the load when free RAM + free swap is smaller:

    slog.Warn("model request too large for system", "requested", ..., "available", ..., "total", ..., ...)
    return nil, fmt.Errorf("model requires more system memory (%s) than is available (%s)", required, available)

The error reaches the CLI as `Error: model requires more system memory (164.8 GiB) than is available (13.4
GiB)`, an API client as HTTP 500 with `{"error":"model requires more system memory ..."}` (`ResponseError: ...
(status code: 500)` in the Python client), and the server log as the slog line. One refusal prints one or
more of them.

The runner (ollama_llama_server / `ollama runner`, later llama-server) is a child process; when it exits
before it is ready the scheduler reports it (llm/server.go WaitUntilRunning / getServerStatus, 0.1.3x on;
llm/llama_server.go after the rename to llama-server):
    fmt.Errorf("llama runner process has terminated: %s", s.status.LastError())   (the runner's last error)
    fmt.Errorf("llama runner process has terminated: %w", s.doneErr)              -> exit status 2
    fmt.Errorf("llama runner process has terminated with exit code %d", ...) / errors.New("llama runner process has terminated")
    fmt.Errorf("llama runner process no longer running: %d %s", exitcode, msg)   (a runner gone while serving)
    fmt.Errorf("timed out waiting for llama runner to start - progress %0.2f - %s", ...)  (OLLAMA_LOAD_TIMEOUT)
    slog.Error("llama runner terminated", "error", err)                            -> msg="llama runner terminated" error="exit status 2"
    newer: `llama-server process has terminated: ...`, `llama-server process no longer running: ...`,
           `timed out waiting for llama-server to start: ...`; 0.1.x: `Error: failed to start a llama runner`
They reach the log as `msg="error loading llama server" error="..."`, the CLI as `Error: ...`, a client as
HTTP 500. The exit status says how the runner died: 2 is the Go runtime's exit after a fatal error (a crash in
the GPU backend as a rule), 0xc0000409 (3221226505) a Windows fail-fast (an abort / assert), 0xc000001d an
illegal instruction (a CPU without the AVX the runner was built for), 0xc0000135 / 0xc0000139 a missing DLL or
entry point, 127 a missing shared library, `signal: killed` the OOM killer. When the runner's own last error
rides on the line (`...: error loading model: ...`, `...: GGML_ASSERT(...) failed`, a CUDA error), the rule
that reads that error names the failure and this one steps aside.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "ollama"


@rule(
    "system-memory-check",
    ("model requires more system memory (", "model request too large for system"),
    r"model requires more system memory \((?P<need>[^)]+)\) than is available \((?P<have>[^)]+)\)"
    r"|msg=\"?model request too large for system\"?(?:.*?\brequested=\"?(?P<rneed>[^\"\s]+(?: [KMGT]i?B)?)\"?)?"
    r"(?:.*?\bavailable=\"?(?P<rhave>[^\"\s]+(?: [KMGT]i?B)?)\"?)?",
)
def _system_memory(m, rec, state):
    if not first_time(state, ("ollama_system_memory",), rec.loc.line):
        return []  # the scheduler's warning, then the error the CLI or the client prints
    need, have = m.group("need") or m.group("rneed"), m.group("have") or m.group("rhave")
    detail = "the model needs more host memory than is free"
    if need and have:
        detail = f"the model needs {need} of host memory, {have} is available (free RAM + swap)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="host_oom", message=rec.text.strip(),
                      fields={"source": "ollama", "required": need, "available": have, "detail": detail})


_EXIT_HINTS = (
    ("0xc000001d", "an illegal instruction: the CPU lacks an instruction set (AVX/AVX2) the runner was built for"),
    ("0xc0000409", "a Windows fail-fast (an abort or a failed assertion in the runner)"),
    ("3221226505", "a Windows fail-fast (0xc0000409: an abort or a failed assertion in the runner)"),
    ("0xc0000135", "a DLL the runner needs was not found (a broken install or a missing runtime)"),
    ("0xc0000139", "an entry point missing from a DLL (mismatched runtime libraries)"),
    ("0xc0000005", "an access violation in the runner"),
    ("exit status 127", "a shared library or the runner binary was not found"),
    ("exit status 2", "the runner's Go runtime exited after a fatal error (a crash in the GPU backend as a rule)"),
    ("signal: killed", "the runner was SIGKILLed (the kernel's OOM killer as a rule)"),
    ("segmentation fault", "the runner segfaulted"),
    ("illegal instruction", "an illegal instruction: the CPU lacks an instruction set the runner was built for"),
)
# the runner's own last error rides on the line: the parser of that error names the failure
_CAUSE_ON_LINE = ("GGML_ASSERT", "error loading model", "unknown model architecture", "out of memory", "CUDA error")
# ... except llama.cpp's older loader error that names no buffer type (llm_load_tensors, early 2024:
# throw std::runtime_error("unable to allocate backend buffer"), host or device alike): no memory rule can
# tell which ran out, so the runner's failure is the finding
_UNNAMED_BUFFER = "unable to allocate backend buffer"


@rule(
    "runner-failed",
    ("runner process has terminated", "server process has terminated", "runner process no longer running",
     "server process no longer running", "timed out waiting for llama", "llama runner terminated",
     "failed to start a llama runner"),
    r"(?:llama runner|llama-server) process (?:has terminated|no longer running)(?P<rest>[^\"\r\n]*)"
    r"|msg=\"?llama runner terminated\"?(?: error=\"?(?P<err>[^\"\r\n]*))?"
    r"|(?P<timeout>timed out waiting for (?:llama runner|llama-server) to start)(?P<trest>[^\"\r\n]*)"
    r"|(?P<old>failed to start a llama runner)",
)
def _runner_failed(m, rec, state):
    text = rec.text
    unnamed = _UNNAMED_BUFFER in text
    if not unnamed and any(c in text for c in _CAUSE_ON_LINE):
        return None
    if not first_time(state, ("ollama_runner",), rec.loc.line):
        return []  # the slog line, the scheduler's error and the CLI's echo of one runner's exit
    rest = (m.group("rest") or m.group("err") or m.group("trest") or "").strip(" :")
    if m.group("timeout"):
        how = "the runner did not become ready within the load timeout (OLLAMA_LOAD_TIMEOUT)"
    elif m.group("old"):
        how = "the runner could not be started"
    elif unnamed:
        how = ("the runner's llama.cpp could not allocate a buffer for the model's weights (`unable to allocate "
               "backend buffer`: the model does not fit the GPU and host memory it was split over)")
    else:
        how = next((h for k, h in _EXIT_HINTS if k in text), "")
        how = f"the runner exited ({rest})" + (f": {how}" if how else "") if rest else "the runner exited"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="ollama_runner_failed", message=rec.text.strip(),
                      fields={"source": "ollama", "exit": rest or None, "detail": how})


_CLI_SPAN = 3  # lines from `ollama run NAME` / `ollama pull NAME` to the `pulling manifest` error it prints


@rule("cli-command", ("ollama run ", "ollama pull "), r"(?:^|[\s$>#])ollama (?:run|pull) (?P<name>[\w./:-]+)")
def _cli_command(m, rec, state):
    state["ollama_cli"] = (rec.loc.line, m.group("name"))
    return None  # the command line itself is no event


# A model name that resolves to nothing. server/images.go PullModel (every release):
#     manifest, err := pullModelManifest(ctx, mp, regOpts)
#     if err != nil { return fmt.Errorf("pull model manifest: %s", err) }
# and the registry's 404 for an unknown name or tag is os.ErrNotExist, so the CLI prints `Error: pull model manifest:
# file does not exist` (`ollama run` pulls a model it does not have), a client `ResponseError: pull model manifest:
# file does not exist (status code: 500)`. A request for a model that is not pulled (server/routes.go
# handleScheduleError, os.ErrNotExist -> 404): fmt.Sprintf("model %q not found, try pulling it first", name)
# (older: `model '%s' not found, try pulling it first`). Other pull errors (`pull model manifest: Get "https://...":
# dial tcp ...`) are the network's, not this.
@rule(
    "model-not-found",
    ("pull model manifest: file does not exist", "not found, try pulling it first"),
    r"(?P<pull>pull model manifest: file does not exist)"
    r"|model (?:\\?[\"'](?P<name>[^\"'\\]*)\\?[\"'] )?not found, try pulling it first",
)
def _model_not_found(m, rec, state):
    if not first_time(state, ("ollama_model_not_found",), rec.loc.line):
        return []  # the CLI's echo, the client's exception, the server's 404 for one name
    name = m.group("name")
    if m.group("pull"):
        cli = state.get("ollama_cli")
        if cli is not None and 0 < rec.loc.line - cli[0] <= _CLI_SPAN:
            name = cli[1]
        what = f"{name!r} is" if name else "the model name (or tag) is"
        detail = f"{what} not in the registry, so its manifest could not be pulled"
    else:
        detail = (f"model {name!r} is not on this machine" if name else "the model is not on this machine") + \
            " (the request names a model that was never pulled)"
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="ollama_model_not_found", message=rec.text.strip(),
                      fields={"source": "ollama", "model": name, "detail": detail})


PARSER = Parser(
    name="ollama",
    framework=FW,
    priority=39,  # before python's exception rule: a client's `ValueError: Ollama call failed ...` carries it
    description="Ollama: a model that needs more host memory than is available; a model runner that died or never became ready;"
                " a model name that neither the machine nor the registry has",
    rules=[_system_memory, _runner_failed, _cli_command, _model_not_found],
)
