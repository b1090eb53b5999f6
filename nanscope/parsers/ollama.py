"""Ollama's own memory check: a model that needs more host memory than the machine has.

Before it starts a runner, Ollama's scheduler (llm/server.go, every release from 0.1.3x to 0.20) estimates
the memory the model needs outside the GPUs and refuses the load when free RAM + free swap is smaller:

    slog.Warn("model request too large for system", "requested", ..., "available", ..., "total", ..., ...)
    return nil, fmt.Errorf("model requires more system memory (%s) than is available (%s)", required, available)

The error reaches the CLI as `Error: model requires more system memory (164.8 GiB) than is available (13.4
GiB)`, an API client as HTTP 500 with `{"error":"model requires more system memory ..."}` (`ResponseError: ...
(status code: 500)` in the Python client), and the server log as the slog line. One refusal prints one or
more of them.
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


PARSER = Parser(
    name="ollama",
    framework=FW,
    priority=39,  # before python's exception rule: a client's `ValueError: Ollama call failed ...` carries it
    description="Ollama: the scheduler's refusal of a model that needs more host memory than is available",
    rules=[_system_memory],
)
