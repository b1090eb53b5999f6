"""The machine around the job: kernel OOM killer, Slurm, the shell, DataLoader workers, checkpoints.

Templates (all seen verbatim in public logs; URLs in sample_logs/system/README.md):
  kernel mm/oom_kill.c   Out of memory: Killed process 698405 (python) total-vm:...kB, anon-rss:...
                         Memory cgroup out of memory: Killed process ...
                         oom-kill:constraint=CONSTRAINT_NONE,...,task=python,pid=698405,uid=1000
                         (<= 4.9: `Out of memory: Kill process 1234 (python) score 900 or sacrifice child`)
  slurmstepd             error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks have been OOM Killed.
                         error: Detected 1 oom-kill event(s) in step 3495064.0 cgroup. ...   (<= 20.x)
                         error: *** JOB 494583 ON node CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***
                         *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***   (old order)
  srun                   error: nid001277: tasks 1-3: Out Of Memory
                         error: Orion-18-69: task 289: Bus error / Killed / Terminated / Exited with exit code 1
  bash                   Killed    |   /var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed   python3 main.py
  torch/utils/data       RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.
                         RuntimeError: DataLoader worker (pid(s) 1234, 5678) exited unexpectedly
                         ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
  torch/serialization    RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory
  safetensors            safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge
  pickle                 _pickle.UnpicklingError: invalid load key, 'v'.
  caffe2/serialize/inline_container.cc (PyTorchStreamWriter, torch.save's zip writer; the line number
                         moves every release: 337, 445, 471, 593, 778, 857):
                         RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file data/0: file write failed
                         RuntimeError: [enforce fail at inline_container.cc:337] . unexpected pos 11347827264 vs 11347827160
  safetensors            bindings/python/py_src/safetensors/torch.py (_flatten, _remove_duplicate_names), a refused save:
                         Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: [...]
  kubernetes             kubectl describe pod (pkg/kubelet: a container the kernel OOM-killed for its cgroup limit):
                           State:          Terminated
                             Reason:       OOMKilled
                         and `Last State: Terminated` / `Reason: OOMKilled` after a restart; kubectl get pods
                         prints the reason in its STATUS column: `trainer-0   0/1   OOMKilled   3   5m`
  errno ENOSPC           OSError: [Errno 28] No space left on device   (under torch/serialization.py `save`/`_save`: a failed save)
  errno EDQUOT           OSError: [Errno 122] Disk quota exceeded      (the same, for a user/project quota)
  safetensors            SafetensorError: Error while serializing: I/O error: No space left on device (os error 28)
                         (older: `Error while serializing: IoError(Os { code: 28, kind: StorageFull, ... })`)
  ray node_manager.cc    (raylet) ... node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), ...
  ray src/ray/raylet/node_manager.cc HandleClientConnectionError, a Ray worker (a Ray Train / vLLM / verl actor)
                         gone without an exception of its own:
                         Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection
                         error code 2. End of file. There are some potential root causes. (1) The process is killed by
                         SIGKILL by OOM killer due to high memory usage. ...   (older: UNEXPECTED_SYSTEM_EXIT); it follows
                         `The actor is dead because its worker process has died.` or the raylet's `A worker died or was
                         killed while executing a task by an unexpected system error.`

Several of these arrive as Python exception lines, which python.py (priority 80) would take as a
generic `exception`: this parser runs before it and still fills `exc_type`.
"""

from __future__ import annotations

import re
from typing import Optional

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule
from nanscope.parsers.python import EXC_LINE

_SIGNAL_WORDS = {
    "killed": "SIGKILL",
    "terminated": "SIGTERM",
    "aborted": "SIGABRT",
    "aborted (core dumped)": "SIGABRT",
    "segmentation fault": "SIGSEGV",
    "segmentation fault (core dumped)": "SIGSEGV",
    "bus error": "SIGBUS",
    "bus error (core dumped)": "SIGBUS",
    "illegal instruction": "SIGILL",
    "illegal instruction (core dumped)": "SIGILL",
    "floating point exception": "SIGFPE",
    "hangup": "SIGHUP",
    "interrupt": "SIGINT",
}


def _exc_type(text: str) -> Optional[str]:
    m = EXC_LINE.match(text)
    return m.group("type") if m else None


def _err(rec, kind: str, fields: dict, message: Optional[str] = None, **kw) -> ErrorEvent:
    return ErrorEvent(
        loc=rec.loc, text=rec.text, framework="system", error=kind, message=message or rec.text.strip(),
        exc_type=_exc_type(rec.text), fields=fields, **kw,
    )


def _tasks(spec: str) -> list[int]:
    """Slurm task lists: `3`, `1-3`, `2,4-5,7`."""
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        if a.isdigit() and (not b or b.isdigit()):
            out.extend(range(int(a), int(b) + 1) if b else [int(a)])
    return out


def _kernel_kill(rec, state, pid: int, process: Optional[str], cgroup: bool):
    # One kill prints several lines (oom-kill:..., Out of memory: Killed process ..., and on old
    # kernels `Kill process` then `Killed process`): one event per killed pid.
    if state.get("oom_pid") == pid:
        return []
    state["oom_pid"] = pid
    return _err(rec, "host_oom", {"pid": pid, "process": process, "source": "kernel", "cgroup": cgroup})


@rule(
    "kernel-oom-kill",
    ("Killed process", "Kill process"),
    r"(?P<cg>Memory cgroup out of memory: )?(?:Out of memory(?: \([\w ]+\))?: )?Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]*)\)",
)
def _kernel(m, rec, state):
    return _kernel_kill(rec, state, int(m.group("pid")), m.group("comm"), bool(m.group("cg")))


@rule("kernel-oom-kill-constraint", ("oom-kill:",), r"oom-kill:constraint=\w+(?:\W.*?)?,task=(?P<comm>[^,]*),pid=(?P<pid>\d+)")
def _kernel_constraint(m, rec, state):
    return _kernel_kill(rec, state, int(m.group("pid")), m.group("comm"), "oom_memcg=" in rec.text)


@rule(
    "k8s-oomkilled",
    ("OOMKilled",),
    r"^\s*(?:Reason:\s+OOMKilled\s*$|\S+\s+\d+/\d+\s+OOMKilled\s+\d+)",
    match_start=True,
)
def _k8s_oomkilled(m, rec, state):
    # The container hit its memory limit and the kernel's cgroup OOM killer ended it; Kubernetes only
    # records the reason (the exit code it shows may be 137 or, for a child process, even 0).
    if not first_time(state, ("k8s_oomkilled",), rec.loc.line):
        return []
    return _err(rec, "host_oom", {"source": "kubernetes", "cgroup": True})


@rule(
    "slurm-oom",
    ("oom_kill event", "oom-kill event", "OOM Killed"),
    r"Detected (?P<n>\d+) oom[_-]kill events?(?:\(s\))? in (?:StepId=|step )(?P<step>[\w.]*\w)|(?P<only>Some of the step tasks have been OOM Killed)",
)
def _slurm_oom(m, rec, state):
    return _err(rec, "host_oom", {
        "source": "slurm", "count": int(m.group("n")) if m.group("n") else None, "step": m.group("step"),
    })


@rule(
    "slurm-cancelled",
    ("CANCELLED AT",),
    r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\w.]+) (?:ON (?P<node>\S+) )?CANCELLED AT (?P<at>\S+)"
    r"(?: DUE TO (?P<why>[A-Z][A-Z ]*?))?(?: on (?P<node2>\S+))? \*\*\*",
)
def _slurm_cancelled(m, rec, state):
    why = m.group("why")
    job = m.group("id").split(".")[0]
    seen = state.setdefault("slurm_cancelled", set())
    if (job, why) in seen:  # `*** JOB n ...` and `*** STEP n.0 ...` report the same cancellation
        return []
    seen.add((job, why))
    fields = {"source": "slurm", "job": job, "step": m.group("id") if m.group("what") == "STEP" else None,
              "node": m.group("node") or m.group("node2"), "at": m.group("at"), "reason": why}
    kinds = {"TIME LIMIT": "slurm_time_limit", "PREEMPTION": "slurm_preempted", "NODE FAILURE": "slurm_node_failure"}
    if why in kinds:
        return _err(rec, kinds[why], fields)
    # No reason (scancel, or Slurm ending the step after an OOM) or another one: the job ended.
    return LifecycleEvent(loc=rec.loc, text=rec.text, framework="system", action="end", fields=fields)


@rule("srun-task", ("srun: error:",), r"srun: error: (?P<node>[^:\s]+): tasks? (?P<tasks>[\d,\-]+): (?P<what>.*?\S)\s*$")
def _srun_task(m, rec, state):
    tasks = _tasks(m.group("tasks"))
    what = m.group("what")
    rank = tasks[0] if len(tasks) == 1 else None
    fields = {"source": "srun", "node": m.group("node"), "tasks": tasks, "reason": what}
    if what.lower() == "out of memory":
        return _err(rec, "host_oom", fields, rank=rank)
    code = re.fullmatch(r"Exited with exit code (-?\d+)", what)
    return _err(
        rec, "worker_failed", fields, rank=rank,
        exitcode=int(code.group(1)) if code else None, signal=_SIGNAL_WORDS.get(what.lower()),
    )


@rule(
    "shell-killed",
    ("Killed",),
    r"^(?:\S+: line \d+:[ \t]+(?P<pid>\d+)[ \t]+)?Killed(?:[ \t]{2,}(?P<cmd>\S.*?))?[ \t]*$",
    match_start=True,
)
def _killed(m, rec, state):
    # bash reports a child killed by SIGKILL: usually the OOM killer, only a hint on its own.
    return _err(rec, "killed", {"source": "shell", "pid": int(m.group("pid")) if m.group("pid") else None,
                                "command": m.group("cmd")}, signal="SIGKILL")


# Ray's memory monitor summary (src/ray/raylet/node_manager.cc, every RAY_event_stats_print_interval_ms;
# Ray 2.2+, the line number moves: 3007, 3040, 3049, 3069, 3096, 3277):
#   (raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors)
#   killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: ..., IP: ...) over
#   the last time period. To see more information about the Workers killed on this node, use `ray logs ...`
# Only a count above 0 is an OOM kill (`0 Workers ... killed due to memory pressure (OOM), 2 Workers crashed
# due to other reasons` reports crashes of another kind). A terminal may wrap the line after "memory".
_RAY_NODE = re.compile(r"at node \(ID: (?P<node>\w+), IP: (?P<ip>[\d.]+)\)")


@rule(
    "ray-oom-kills",
    ("Workers (tasks / actors) killed due to memory",),
    r"(?<!\d)(?P<n>\d{1,7}) Workers \(tasks / actors\) killed due to memory(?P<rest>.*)$",
)
def _ray_oom_kills(m, rec, state):
    rest = m.group("rest")
    if rest.strip() and not rest.startswith(" pressure (OOM)"):
        return None
    if int(m.group("n")) == 0:
        return []
    node = _RAY_NODE.search(rest)
    ip = node.group("ip") if node else None
    if not first_time(state, ("ray_oom", ip), rec.loc.line):
        return []
    detail = (f"Ray's memory monitor killed {m.group('n')} worker(s) on node {ip or '(not in view)'}: "
              f"host memory over RAY_memory_usage_threshold")
    return _err(rec, "host_oom", {"source": "ray", "workers_killed": int(m.group("n")), "ip": ip,
                                  "detail": detail}, message=detail)


@rule(
    "ray-worker-died",
    ("Worker unexpectedly exits with a connection error code",),
    r"Worker unexpectedly exits with a connection error code (?P<code>\d+)",
)
def _ray_worker_died(m, rec, state):
    # Ray names the likely causes but cannot tell them apart: a SIGKILL (the OOM killer first), `ray stop
    # --force`, or a native crash. Only the last one leaves its own trace in the worker's log.
    if "Worker exit type:" in rec.text:
        return None  # not claimed: the raylet's full report is parsers/python.py's ray-worker-died (its exit type)
    pid = re.search(r"Worker PID: (\d+)", rec.text)
    return _err(rec, "killed", {"source": "ray", "pid": int(pid.group(1)) if pid else None,
                                "connection_error": int(m.group("code"))})


@rule(
    "dataloader-worker",
    ("DataLoader worker", "encountered in worker"),
    r"DataLoader worker \(pid(?:\(s\))? (?P<pids>[^)]*)\) (?:is killed by signal: (?P<sig>[^.]+)\.?"
    r"|exited unexpectedly(?: with exit code (?P<code>-?\d+))?)"
    r"|Unexpected (?P<fault>bus error|segmentation fault|floating-point exception) encountered in worker",
)
def _dataloader(m, rec, state):
    pids = [int(p) for p in re.findall(r"\d+", m.group("pids") or "")]
    sig = m.group("sig")
    fault = m.group("fault")
    signal = _SIGNAL_WORDS.get(sig.lower()) if sig else ({"bus error": "SIGBUS", "segmentation fault": "SIGSEGV",
                                                         "floating-point exception": "SIGFPE"}.get(fault or ""))
    return _err(rec, "dataloader_worker_killed", {
        "pids": pids, "signal_name": sig, "shm_suspect": fault == "bus error",
    }, signal=signal, exitcode=int(m.group("code")) if m.group("code") else None)


@rule(
    "checkpoint-corrupt",
    ("PytorchStreamReader failed", "Error while deserializing header", "invalid load key"),
    r"PytorchStreamReader failed (?P<zip>.*?\S)\s*$"
    r"|Error while deserializing header: (?P<st>\w+)"
    r"|invalid load key, (?P<key>'[^']*'|\S+?)\.?\s*$",
)
def _checkpoint(m, rec, state):
    if m.group("zip"):
        fields = {"format": "torch_zip", "detail": m.group("zip")}
    elif m.group("st"):
        fields = {"format": "safetensors", "detail": m.group("st")}
    else:
        fields = {"format": "pickle", "detail": f"invalid load key {m.group('key')}"}
    return _err(rec, "checkpoint_corrupt", fields)


# A frame of torch.save, anywhere in the line (a logger's prefix may precede it): the ENOSPC that
# follows was raised while writing a checkpoint. Never claims the line (python.py reads frames too).
_SAVE_SPAN = 400


@rule("checkpoint-save-frame", ('serialization.py"',), r'File "[^"]*torch/serialization\.py", line \d+, in _?save\b')
def _save_frame(m, rec, state):
    state["saving_line"] = rec.loc.line
    return None


# safetensors' Python binding (bindings/python/src/lib.rs serialize / serialize_file) wraps every error of
# the Rust writer as SafetensorError(format!("Error while serializing: {e:?}")); an I/O error prints as the
# Rust io::Error, in Debug form in older releases and in Display form in newer ones:
#   Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })
#   Error while serializing: I/O error: No space left on device (os error 28)
# Any I/O error while serializing is a failed write (28 ENOSPC, 122 EDQUOT, 5 EIO from a network filesystem).
_RUST_IO = (r"Error while serializing: (?:IoError\(Os \{ code: (?P<rcode>\d+), kind: (?P<rkind>\w+)"
            r"|I/O error: (?P<rmsg>[^()]*?) \(os error (?P<rcode2>\d+)\))")
_ERRNO_CAUSE = {28: "disk_full", 122: "quota", 5: "io_error"}


@rule(
    "checkpoint-write",
    ("PytorchStreamWriter failed", "unexpected pos", "No space left on device", "Some tensors share memory",
     "Disk quota exceeded", "Error while serializing: "),
    r"PytorchStreamWriter failed writing file (?P<name>\S+?): file write failed"
    r"|unexpected pos (?P<pos>\d+) vs (?P<want>\d+)"
    r"|(?P<enospc>\[Errno (?P<errno>28|122)\] (?:No space left on device|Disk quota exceeded))"
    r"|(?P<rust>" + _RUST_IO + r")"
    r"|(?P<shared>Some tensors share memory, this will lead to duplicate memory on disk)",
)
def _checkpoint_write(m, rec, state):
    saving = state.pop("saving_line", None)
    if m.group("rust"):
        code = int(m.group("rcode") or m.group("rcode2"))
        return _err(rec, "checkpoint_save_failed", {"cause": _ERRNO_CAUSE.get(code, "write_failed"), "errno": code,
                                                    "format": "safetensors", "saving": True})
    if m.group("enospc"):
        cause = _ERRNO_CAUSE[int(m.group("errno"))]
        if saving is None or rec.loc.line - saving > _SAVE_SPAN:
            return _err(rec, "disk_full", {"cause": cause, "saving": False})
        return _err(rec, "checkpoint_save_failed", {"cause": cause, "saving": True})
    if m.group("shared"):
        return _err(rec, "checkpoint_save_failed", {"cause": "shared_tensors", "format": "safetensors", "saving": True})
    cause = "write_failed" if m.group("name") else "short_write"
    return _err(rec, "checkpoint_save_failed", {"cause": cause, "format": "torch_zip", "saving": True,
                                                "file": m.group("name")})


PARSER = Parser(
    name="system",
    framework="system",
    priority=45,
    description="kernel OOM killer, Slurm and srun, shell kills, Ray worker deaths, DataLoader workers, corrupt checkpoints",
    rules=[_kernel, _kernel_constraint, _k8s_oomkilled, _slurm_oom, _slurm_cancelled, _srun_task, _killed, _ray_oom_kills, _ray_worker_died, _dataloader, _save_frame, _checkpoint_write, _checkpoint],
)
