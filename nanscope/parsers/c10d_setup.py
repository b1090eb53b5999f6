"""torch.distributed's own set-up errors: a process group that cannot be made in this process.

Each rule reads the message torch raises (the exception's own line, or the bare message where two
processes' tracebacks interleave on one console); the source line that quotes it in a traceback
(`raise RuntimeError("Distributed package doesn't have NCCL " "built in")`, `warnings.warn("...")`) is
not the error, so a phrase right after a quote does not count. Each is a set-up failure of the process
that prints it (one event per process), and its rank is that process's prefix.

- torch/distributed/rendezvous.py: the env:// rendezvous without its variables (below).
- torch/distributed/distributed_c10d.py `_new_process_group_helper` (1.x - 2.x): `RuntimeError("Distributed
  package doesn't have NCCL built in")` (likewise MPI, UCC, Gloo), and `_get_default_timeout` (2.2+):
  `UserWarning: Attempted to get default timeout for nccl backend, but NCCL support is not compiled`, printed
  before it: the wheel has no such backend (Windows and macOS wheels have no NCCL).
- torch/csrc/distributed/c10d/TCPStore.cpp (2.4+, when the libuv store became the default):
  `use_libuv was requested but PyTorch was build without libuv support` (the Windows wheels of 2.4 - 2.x).
- distributed_c10d.py `_get_default_group`: `Default process group has not been initialized, please make
  sure to call init_process_group.` (RuntimeError in torch 1.x, ValueError in 2.x): a collective, DDP or
  SyncBatchNorm in a process that never made the default group.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "pytorch"


# torch/distributed/rendezvous.py `_env_rendezvous_handler` (torch 1.0+: `_env_error(var)` = `_rendezvous_error(
# "env:// rendezvous: " + f"environment variable {var} expected, but not set")`, a ValueError "Error initializing
# torch.distributed using " + msg): init_process_group / init_rpc with init_method env:// (the default) in a
# process that no launcher started, so RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT is missing. The first
# wording of pytorch/pytorch#11782 (torch 1.0 previews) said `env:// rendezvous: WORLD_SIZE not set`. The
# exception's own line only: `raise _env_error("RANK")` in the traceback above it names no variable's absence.
@rule(
    "env-rendezvous-unset",
    ("expected, but not set", "env:// rendezvous: "),
    r"(?P<type>ValueError|RuntimeError): (?:Error initializing torch\.distributed using )?env:// rendezvous: "
    r"(?:environment variable (?P<var>[A-Z_]+) expected, but not set|(?P<old>[A-Z_]+) not set)",
)
def _env_unset(m, rec, state):
    var = m.group("var") or m.group("old")
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="dist_env_not_set",
                      message=rec.text[m.start("type"):].strip(), exc_type=m.group("type"),
                      fields={"variable": var, "init_method": "env://"})


@rule(
    "backend-not-built",
    ("package doesn't have", "support is not compiled"),
    r"(?<![\"'])(?:Distributed package doesn't have (?P<backend>NCCL|MPI|UCC|Gloo|GLOO) built in"
    r"|Attempted to get default timeout for (?P<wbackend>nccl|ucc) backend, but (?:NCCL|UCC) support is not compiled)",
)
def _backend_not_built(m, rec, state):
    backend = (m.group("backend") or m.group("wbackend")).upper()
    if not first_time(state, ("backend_not_built", backend), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="dist_backend_unavailable",
                      message=rec.text[m.start():].strip(), exc_type=None if m.group("wbackend") else "RuntimeError",
                      fields={"backend": backend, "build": "torch", "warning": m.group("wbackend") is not None})


@rule(
    "store-without-libuv",
    ("was build without libuv support", "was built without libuv support"),
    r"(?<![\"'])use_libuv was requested but PyTorch was buil[dt] without libuv support",
)
def _store_without_libuv(m, rec, state):
    if not first_time(state, ("store_libuv",), rec.loc.line):
        return []
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="store_libuv_unsupported",
                      message=rec.text[m.start():].strip(), exc_type="RuntimeError", fields={"store": "TCPStore"})


@rule(
    "default-group-not-initialized",
    ("Default process group has not been initialized",),
    r"(?<![\"'])Default process group has not been initialized, please make sure to call init_process_group",
)
def _default_group(m, rec, state):
    if not first_time(state, ("default_group",), rec.loc.line):
        return []
    exc = "ValueError" if "ValueError" in rec.text[:m.start()] else "RuntimeError" if "RuntimeError" in rec.text[:m.start()] else None
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="process_group_not_initialized",
                      message=rec.text[m.start():].strip(), exc_type=exc, fields={})


PARSER = Parser(
    name="c10d_setup",
    framework=FW,
    priority=11,  # before python's exception reader (80): these lines are the exceptions' own
    description="torch.distributed set-up errors: env:// without its variables, a backend or store the build lacks, no default process group",
    rules=[_env_unset, _backend_not_built, _store_without_libuv, _default_group],
)
