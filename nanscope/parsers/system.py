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
                         *** JOB N ON node CANCELLED AT T DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***
  srun / salloc          error: Node failure on node12
  slurmctld              _job_complete: JobId=127441 WTERMSIG 9  |  _job_complete: JobId=N OOM failure
  submitit               Caught signal SIGUSR2 on learnfair0293: this job is preempted.  (or timed-out)
  srun                   error: nid001277: tasks 1-3: Out Of Memory
                         error: Orion-18-69: task 289: Bus error / Killed / Terminated / Exited with exit code 1
                         (Killed / Terminated after a task of the step failed, or of several tasks at once after
                         `srun: Job step aborted: ...` / `srun: Terminating job step N`: the step's teardown)
  bash                   Killed    |   /var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed   python3 main.py
                         (zh_CN: 已杀死; glued to a tqdm bar: `... [01:06<03:59,  3.06it/s]Killed`)
                         Segmentation fault (core dumped)  |  Bus error (core dumped)   (a crash signal: worker_failed)
  JetBrains IDEs         Process finished with exit code 137 (interrupted by signal 9: SIGKILL)
  kubectl / subprocess   command terminated with exit code 137  |  Command '[...]' died with <Signals.SIGKILL: 9>.
                         (a fault signal: Command '[...]' died with <Signals.SIGSEGV: 11>., a crash: worker_failed)
  torch/utils/data       RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed.
                         RuntimeError: DataLoader worker (pid(s) 1234, 5678) exited unexpectedly
                         ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
  paddle                 SystemError: (Fatal) DataLoader process (pid 1104) exited is killed by signal: Killed.
                         DataLoader process (pid N) exited unexpectedly with code C.   (fluid/imperative/data_loader.cc)
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
  errno ENOSPC           OSError: [Errno 28] No space left on device   (under torch/serialization.py `save`/`_save`: a failed save;
                         elsewhere disk_full), [Errno 122] Disk quota exceeded, Rust's `(os error 28)`
  errno ESTALE           OSError: [Errno 116] Stale file handle
  errno EIO              OSError: [Errno 5] Input/output error: 'path'   (TensorFlow: `<path>; Input/output error`)
  /dev/shm               RuntimeError: unable to write to file </torch_15769_1517813162>
  kubelet eviction       Reason: Evicted / Message: The node was low on resource: memory.
  ray node_manager.cc    (raylet) ... node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), ...
  ray src/ray/raylet/node_manager.cc HandleClientConnectionError, a Ray worker (a Ray Train / vLLM / verl actor)
                         gone without an exception of its own:
                         Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection
                         error code 2. End of file. There are some potential root causes. (1) The process is killed by
                         SIGKILL by OOM killer due to high memory usage. ...   (older: UNEXPECTED_SYSTEM_EXIT); it follows
                         `The actor is dead because its worker process has died.` or the raylet's `A worker died or was
                         killed while executing a task by an unexpected system error.`

  fault handlers        UCX: [host:pid:thread:tid] Caught signal 7 (Bus error: nonexistent physical address)
                         CPython faulthandler: Fatal Python error: Segmentation fault
                         (Open MPI's own `[host:pid] Signal: Segmentation fault (11)` report: openmpi.py)
  slurmstepd accounting  error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed / Exceeded job memory limit
  NVML / nvidia-smi      Failed to initialize NVML: Driver/library version mismatch (or: Unknown Error, Driver Not Loaded)
                         NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.  |  No devices were found
                         nvidia-smi -q: Remapped Rows ... Pending : Yes
  libnvidia-container    nvidia-container-cli: <stage> error: ...   (docker: could not select device driver "" with capabilities: [[gpu]])
  NVIDIA kernel module   NVRM: API mismatch: the client has the version ..., but  |  NVRM: No NVIDIA GPU found  |  RmInitAdapter failed!
  PCIe AER               nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)
  kernel storage         blk_update_request: I/O error, dev nvme0n1, sector ...  |  Buffer I/O error on dev sda  |  EXT4-fs error
  errno EMFILE           OSError: [Errno 24] Too many open files  |  RuntimeError: received 0 items of ancdata
  kubernetes             FailedScheduling: 0/6 nodes are available: 6 Insufficient nvidia.com/gpu.  |  Exit Code: 137
(The functions below name each template's source and its wording across releases.)

Several of these arrive as Python exception lines, which python.py (priority 80) would take as a
generic `exception`: this parser runs before it and still fills `exc_type`.
"""

from __future__ import annotations

import re
from typing import Optional

from nanscope.model import ErrorEvent, LifecycleEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
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
    # kernels `Kill process` then `Killed process`): one event per killed pid. The report's head
    # (`X invoked oom-killer`, held back by _oom_invoked) is superseded by the kill, which names the victim.
    held = state.get("pending")
    if held is not None and (held.fields or {}).get("invoked_by") is not None:
        state.pop("pending")
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


# runc (libcontainer/process_linux.go, initProcess.start, runc 1.0 on): when starting the container's init fails and
# the cgroup's OOM-kill count is above zero, the error is replaced by
#     const oomError = "container init was OOM-killed (memory limit too low?)"
# (`oomError + ": " + the original error` at debug level). containerd / CRI-O / Docker relay it (`OCI runtime create
# failed: runc create failed: unable to start container process: container init was OOM-killed ...`), the kubelet as
# a Failed event or a waiting reason (CreateContainerError, RunContainerError, StartError): the container's memory
# limit is below what even its first process needs, so Kubernetes never reports OOMKilled for it.
@rule("runc-init-oom", ("container init was OOM-killed",), r"container init was OOM-killed \(memory limit too low\?\)")
def _runc_init_oom(m, rec, state):
    before = rec.text[:m.start()].rstrip(" \"'`")
    if before.endswith((" =", ":=", "(", ",")) or "Contains(" in rec.text:
        return None  # the Go constant or a match on it quoted from source, not a report (logfmt's `error="..."` is one)
    if not first_time(state, ("runc_init_oom",), rec.loc.line):
        return []  # the runtime's error, the kubelet's event and its status: one start
    return _err(rec, "host_oom", {"source": "runc", "cgroup": True, "phase": "container start",
                                  "detail": "the container's init process was OOM-killed as it started: the memory "
                                            "limit is below what the container needs to start"})


@rule(
    "slurm-oom",
    ("oom_kill event", "oom-kill event", "OOM Killed"),
    r"Detected (?P<n>\d+) oom[_-]kill events?(?:\(s\))? in (?:StepId=|step )(?P<step>[\w.]*\w)|(?P<only>Some of the step tasks have been OOM Killed)",
)
def _slurm_oom(m, rec, state):
    return _err(rec, "host_oom", {
        "source": "slurm", "count": int(m.group("n")) if m.group("n") else None, "step": m.group("step"),
    })


# slurmstepd's cancellation banner (src/slurmd/slurmstepd/req.c), by release:
#   <= 14.03   *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT ***
#   14.03.8    *** JOB N CANCELLED AT T DUE TO TIME LIMIT on n447 ***, ... DUE TO NODE n447 FAILURE ***,
#              *** JOB N CANCELLED AT T *** on sh-2-3   (scancel)
#   15.08+     *** JOB N ON node CANCELLED AT T DUE TO TIME LIMIT | PREEMPTION | JOB REQUEUE | TASK FAILURE ***,
#              ... DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***, ... DUE to SIGNAL Terminated ***
_CANCELLED = LazyPattern(
    r"\*\*\* (?P<what>JOB|STEP) (?P<id>[\w.+]+) (?:ON (?P<node>\S+) )?CANCELLED AT (?P<at>\S+)"
    r"(?: DUE (?:TO|to) (?:NODE (?:(?P<fnode>\S+) )?(?P<nodefail>FAILURE)|SIGNAL (?P<signame>[A-Za-z ]+?)|(?P<why>[A-Z][A-Z ]*?)))?"
    r"(?:, [^*]*?)?(?: on (?P<node2>\S+))? \*\*\*(?: on (?P<node3>\S+))?"
)


@rule("slurm-cancelled", ("CANCELLED AT",), _CANCELLED.pattern)
def _slurm_cancelled(m, rec, state):
    why = "NODE FAILURE" if m.group("nodefail") else m.group("why")
    job = m.group("id").split(".")[0]
    seen = state.setdefault("slurm_cancelled", set())
    if (job, why) in seen:  # `*** JOB n ...` and `*** STEP n.0 ...` report the same cancellation
        return []
    seen.add((job, why))
    fields = {"source": "slurm", "job": job, "step": m.group("id") if m.group("what") == "STEP" else None,
              "node": m.group("node") or m.group("fnode") or m.group("node2") or m.group("node3"), "at": m.group("at"),
              "reason": why, "signal_name": m.group("signame")}
    kinds = {"TIME LIMIT": "slurm_time_limit", "PREEMPTION": "slurm_preempted", "NODE FAILURE": "slurm_node_failure"}
    if why in kinds:
        return _err(rec, kinds[why], fields)
    # No reason (scancel, or Slurm ending the step after an OOM), a signal someone sent, or another one: the job ended.
    return LifecycleEvent(loc=rec.loc, text=rec.text, framework="system", action="end", fields=fields)


# srun / salloc / the step-launch API when slurmctld reports an allocated node down
# (src/srun/allocate.c, src/salloc/salloc.c, src/api/step_launch.c: error("Node failure on %s", nodelist)).
@rule("slurm-node-fail", ("Node failure on",), r"(?:(?:srun|salloc|sbatch): )?error: Node failure on (?P<nodes>\S+)")
def _slurm_node_fail(m, rec, state):
    if not first_time(state, ("node_fail", m.group("nodes")), rec.loc.line):
        return []
    return _err(rec, "slurm_node_failure", {"source": "slurm", "node": m.group("nodes")})


@rule("srun-task", ("srun: error:",), r"srun: error: (?P<node>[^:\s]+): tasks? (?P<tasks>[\d,\-]+): (?P<what>.*?\S)\s*$")
def _srun_task(m, rec, state):
    tasks = _tasks(m.group("tasks"))
    what = m.group("what")
    rank = tasks[0] if len(tasks) == 1 else None
    fields = {"source": "srun", "node": m.group("node"), "tasks": tasks, "reason": what}
    signal = _SIGNAL_WORDS.get(what.lower())
    if signal in ("SIGKILL", "SIGTERM") and (state.get("srun_task_failed")
                                             or (state.get("srun_step_aborted") and len(tasks) > 1)):
        # srun ending the step's other tasks after one failed (kill-on-bad-exit, an MPI_Abort, a task that
        # exited non-zero): its teardown, no rank (as torchrun's `closing signal SIGTERM` lines)
        return LifecycleEvent(loc=rec.loc, text=rec.text, framework="system", action="teardown",
                              fields={**fields, "signal": signal, "stopped_ranks": tasks, "process_failed": False})
    code = re.fullmatch(r"Exited with exit code (-?\d+)", what)
    if what.lower() == "out of memory" or (code and int(code.group(1)) != 0) or signal in _OWN_FAULT_SIGNALS:
        state["srun_task_failed"] = True
    if what.lower() == "out of memory":
        return _err(rec, "host_oom", fields, rank=rank)
    return _err(
        rec, "worker_failed", fields, rank=rank,
        exitcode=int(code.group(1)) if code else None, signal=signal,
    )


_OWN_FAULT_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT")


# srun aborting the step (src/api/step_launch.c: "Job step aborted: Waiting up to %d seconds for job step to
# finish."; src/srun/srun_job.c: "Terminating job step %u.%u" / "Terminating StepId=%ps", "Force Terminated job
# step" / "Force Terminated StepId"): the tasks it reports Killed / Terminated together after this are the
# step being ended (a time limit, a task's failure, an MPI_Abort), not kills of their own.
@rule("srun-step-aborted", ("Job step aborted", "Terminating job step", "Terminating StepId", "Force Terminated"),
      r"srun: (?:Job step aborted|Terminating (?:job step|StepId)|Force Terminated (?:job step|StepId|job))")
def _srun_step_aborted(m, rec, state):
    state["srun_step_aborted"] = rec.loc.line
    return []


# bash's report of a child killed by a signal: the signal's strsignal() text, in the user's locale
# (glibc: "Killed"; zh_CN "已杀死", es "Terminado (killed)"). A job-control line puts the job number
# first (`[1]+  Killed   python train.py`), a script's child its line and pid (`./run.sh: line 28:
# 8156 Killed   python3 main.py`), whose column padding a web paste may collapse to one space. A log
# collector may stamp the line (`2020-11-24 20:22:28.106 /bin/bash: line 27: 318 Killed sh start.sh`), and
# journald prefix it (`Nov 20 15:10:43 inky inkypi[27237]: /usr/local/bin/inkypi: line 13: 27241 Killed ...`).
# An issue's paste may wrap the bare word in markdown bold, inside its code block too (`**Killed**`).
KILLED_WORDS = ("Killed", "已杀死", "Terminado (killed)")
_KILLED_WORD = "(?:" + "|".join(re.escape(w) for w in KILLED_WORDS) + ")"
# A collector's stamp, or journald's syslog prefix when the job runs as a unit (`Nov 20 15:10:43 inky inkypi[27237]: `).
_STAMP = (r"(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?[ \t]+"
          r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@\-]+(?:\[\d+\])?: )?")


@rule(
    "shell-killed",
    KILLED_WORDS,
    "^" + _STAMP + r"(?:(?:\S+: line \d+:[ \t]+(?P<pid>\d+)[ \t]+" + _KILLED_WORD + r"(?:[ \t]+(?P<cmd>\S.*?))?)"
    r"|(?:\[\d+\][+-]?[ \t]+)?" + _KILLED_WORD + r"(?:[ \t]{2,}(?P<cmd2>\S.*?))?|\*\*" + _KILLED_WORD + r"\*\*)[ \t]*$",
    match_start=True,
)
def _killed(m, rec, state):
    # bash reports a child killed by SIGKILL: usually the OOM killer, only a hint on its own.
    return _err(rec, "killed", {"source": "shell", "pid": int(m.group("pid")) if m.group("pid") else None,
                                "command": m.group("cmd") or m.group("cmd2")}, signal="SIGKILL")


# bash's report of a child that died of a crash signal (strsignal text, `(core dumped)` when a core was
# written): `Segmentation fault (core dumped)`, `Bus error (core dumped)` (in a container, often /dev/shm too
# small for a tensor shared through it), `Illegal instruction`, `Floating point exception`; a script's child
# as `./run.sh: line 12: 4242 Segmentation fault      (core dumped) python train.py`.
_CRASH_WORDS = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Illegal instruction": "SIGILL",
                "Floating point exception": "SIGFPE"}


@rule(
    "shell-crash-signal",
    tuple(_CRASH_WORDS),
    "^" + _STAMP + r"(?:\S+: line \d+:[ \t]+(?P<pid>\d+)[ \t]+|\[\d+\][+-]?[ \t]+)?"
    r"(?P<word>" + "|".join(_CRASH_WORDS) + r")(?P<core>[ \t]*\(core dumped\))?(?:[ \t]{2,}(?P<cmd>\S.*?)|[ \t]+(?P<cmd2>\S.*?))?[ \t]*$",
    match_start=True,
)
def _shell_crash(m, rec, state):
    if m.group("cmd2") and not m.group("pid"):
        return None  # `Bus error reading ...`: prose, not the shell's one-word report
    return _crash_report(m, rec, state, "shell_crash", _CRASH_WORDS, m.group("cmd") or m.group("cmd2"))


def _crash_report(m, rec, state, key: str, words: dict, command):
    """A shell's report of a child that died of a crash signal: one worker_failed per signal word."""
    if not first_time(state, (key, m.group("word")), rec.loc.line):
        return []
    return _err(rec, "worker_failed", {"source": "shell", "pid": int(m.group("pid")) if m.group("pid") else None,
                                       "core_dumped": bool(m.group("core")), "command": command},
                signal=words[m.group("word")])


# zsh's report of a job that died of a crash signal (Src/jobs.c printjob, with zsh's own lowercase
# signal names, Src/signames2.awk): `zsh: segmentation fault (core dumped)  python train.py` for the
# foreground job, `[1]    20121 floating point exception (core dumped)  python train.py` with job
# control (pasted without the job number too: `    20121 floating point exception (core dumped)`).
_ZSH_CRASH = {"segmentation fault": "SIGSEGV", "bus error": "SIGBUS", "floating point exception": "SIGFPE",
              "illegal hardware instruction": "SIGILL"}


@rule(
    "zsh-crash-signal",
    tuple(_ZSH_CRASH),
    "^" + _STAMP + r"(?:zsh: |(?:\[\d+\][+-]?)?[ \t]+(?P<pid>\d+)[ \t]+)"
    r"(?P<word>" + "|".join(_ZSH_CRASH) + r")(?P<core>[ \t]*\(core dumped\))?(?:[ \t]+(?P<cmd>\S.*?))?[ \t]*$",
    match_start=True,
)
def _zsh_crash(m, rec, state):
    return _crash_report(m, rec, state, "zsh_crash", _ZSH_CRASH, m.group("cmd"))


# A progress bar has no newline of its own: the shell's `Killed` lands right after tqdm's last redraw
# (`... 331/1063 [01:06<03:59,  3.06it/s]Killed`).
GLUED_KILL = LazyPattern(r"\]" + _KILLED_WORD + r"[ \t]*$")


@rule("bar-killed", KILLED_WORDS, r"(?<!\d)\d+/\d+[ \t]*\[[^\]\n]*\]" + _KILLED_WORD + r"[ \t]*$")
def _bar_killed(m, rec, state):  # hf.py's tqdm rule leaves such a line to this one (GLUED_KILL)
    if not first_time(state, ("bar_killed",), rec.loc.line):
        return []
    return _err(rec, "killed", {"source": "shell", "after_progress_bar": True}, signal="SIGKILL")


# JetBrains IDEs' run console (platform ProcessTerminatedListener): `Process finished with exit code 137
# (interrupted by signal 9: SIGKILL)` (older builds `signal 9:SIGKILL`; a CJK locale's full-width
# parentheses and colon as pasted: `（interrupted by signal 9： SIGKILL）`).
_IDE_EXIT = LazyPattern(
    r"Process finished with exit code (?P<code>\d+)\s*[(（]interrupted by signal (?P<sig>\d+)\s*[:：]\s*(?P<name>SIG[A-Z0-9]+)\s*[)）]"
)


@rule("ide-exit-signal", ("Process finished with exit code",), _IDE_EXIT.pattern)
def _ide_exit(m, rec, state):
    name = m.group("name")
    fields = {"source": "ide", "exitcode": int(m.group("code")), "signal_number": int(m.group("sig"))}
    if name == "SIGKILL":
        return _err(rec, "killed", fields, signal=name)
    if name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"):
        return _err(rec, "worker_failed", fields, signal=name, exitcode=-int(m.group("sig")))
    return []  # SIGINT / SIGTERM: the user stopped the run from the IDE


# Ray's memory monitor summary (src/ray/raylet/node_manager.cc, every RAY_event_stats_print_interval_ms;
# Ray 2.2+, the line number moves: 3007, 3040, 3049, 3069, 3096, 3277):
#   (raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors)
#   killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: ..., IP: ...) over
#   the last time period. To see more information about the Workers killed on this node, use `ray logs ...`
# Only a count above 0 is an OOM kill (`0 Workers ... killed due to memory pressure (OOM), 2 Workers crashed
# due to other reasons` reports crashes of another kind). A terminal may wrap the line after "memory".
@rule(
    "ray-oom-kills",
    ("Workers (tasks / actors) killed due to memory",),
    r"(?<!\d)(?P<n>\d{1,9}) Workers \(tasks / actors\) killed due to memory(?P<rest>[^\n]*)",
)
def _ray_oom_kills(m, rec, state):
    rest = m.group("rest")
    # `... memory pressure (OOM), 0 Workers ...`, or the line cut (wrapped) right after `memory`
    if int(m.group("n")) == 0 or not (rest.strip() == "" or rest.lstrip().startswith("pressure (OOM)")):
        return []
    where = _RAY_NODE.search(rest)
    ip = where.group("ip") if where else None
    if not first_time(state, ("ray_oom", ip), rec.loc.line):
        return []
    detail = (f"Ray's memory monitor killed {m.group('n')} worker(s) on node {ip or '(not in view)'}: "
              f"host memory over RAY_memory_usage_threshold")
    return _err(rec, "host_oom", {"source": "ray", "workers_killed": int(m.group("n")), "ip": ip,
                                  "detail": detail}, message=detail)


_RAY_NODE = LazyPattern(r"\bat node \(ID: (?P<node>\w+), IP: (?P<ip>[\d.]+)\)")


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
    ("DataLoader worker", "encountered in worker", "DataLoader process (pid"),
    r"DataLoader (?:worker|process) \(pid(?:\(s\))? (?P<pids>[^)]*)\) (?:exited )?(?:is killed by signal: (?P<sig>[^.]+)\.?"
    r"|exited unexpectedly(?: with (?:exit )?code (?P<code>-?\d+))?)"
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


@rule("checkpoint-save-frame", ('serialization.py"', 'safetensors/torch.py"'),
      r'File "[^"]*(?:torch/serialization\.py", line \d+, in _?save|safetensors/torch\.py", line \d+, in save(?:_file|_model)?)\b')
def _save_frame(m, rec, state):
    state["saving_line"] = rec.loc.line
    return None


# TensorFlow 1.x's CheckpointSaverHook (tensorflow/python/training/basic_session_run_hooks.py _save, also the
# Estimator's and forks' copies of it) announces each save before the Saver runs its SaveV2 op:
#     logging.info("Saving checkpoints for %d into %s.", step, self._save_path)
# and an op kernel that fails reports it at WARNING (tensorflow/core/framework/op_kernel.cc CtxFailureWithWarning):
#     LOG(WARNING) << "OP_REQUIRES failed at " << io::Basename(file) << ":" << line << " : " << s;
# so `OP_REQUIRES failed at save_restore_v2_ops.cc:137 : Unknown: : Unable to connect to endpoint` after the
# hook's line is that save failing (the file holds SaveV2, RestoreV2 and MergeV2Checkpoints; only the hook's line
# says it was the save). The hook's line is also a save frame for the ENOSPC rules above.
_TF_SAVE_HOOK = LazyPattern(r"Saving checkpoints for (?P<step>\d+) into (?P<path>\S+?)\.?\s*$")


# The op runs as soon as the hook has logged, so its failure comes within a few lines; the Saver's restore
# (saver.py: logging.info("Restoring parameters from %s", save_path)) in between makes a later failure the
# restore's, and so does a status naming a key missing from the checkpoint.
_TF_SAVE_OP_SPAN = 50


@rule("tf-checkpoint-saver-hook", ("Saving checkpoints for ", "Restoring parameters from "),
      _TF_SAVE_HOOK.pattern + r"|(?P<restore>Restoring parameters from \S)")
def _tf_save_hook(m, rec, state):
    if m.group("restore"):
        state.pop("tf_saving", None)
        return None
    state["saving_line"] = rec.loc.line
    state["tf_saving"] = (rec.loc.line, int(m.group("step")), m.group("path"))
    return None


@rule("tf-save-op-failed", ("OP_REQUIRES failed at ",),
      r"OP_REQUIRES failed at (?P<at>(?:save_restore_v2_ops|save_restore_tensor|tensor_bundle)\.cc:\d+) :(?: (?P<status>.*?))?\s*$")
def _tf_save_op_failed(m, rec, state):
    held = state.get("tf_saving")
    if held is None or not 0 < rec.loc.line - held[0] <= _TF_SAVE_OP_SPAN or "not found in checkpoint" in rec.text:
        return None  # a restore, or a save this log does not show
    if not first_time(state, ("tf_save_op",), rec.loc.line):
        return []
    state.pop("tf_saving", None)
    _, step, path = held
    status = (m.group("status") or "").strip() or None
    return _err(rec, "checkpoint_save_failed", {"cause": "save_op_failed", "saving": True, "format": "tensorflow",
                                                "file": path, "status": status, "op_at": m.group("at")},
                step=step)


# The HF Trainer's checkpoint bookkeeping racing between ranks (huggingface/transformers src/transformers/trainer.py):
#   4.49.0.dev's staging save (transformers#35580, reverted after #36076): every rank wrote into a
#     tmp-checkpoint-<random> directory and renamed it, `os.renames(output_dir, checkpoint_dir)` in _save_checkpoint;
#     the second rank's rename finds the checkpoint made: `OSError: [Errno 39] Directory not empty:
#     '.../tmp-checkpoint-djiermq4' -> '.../checkpoint-100'`.
#   save_total_limit's _rotate_checkpoints: `shutil.rmtree(checkpoint)` (later `shutil.rmtree(checkpoint,
#     ignore_errors=True)`) run by more than one process deletes the same old checkpoint; the loser's rmtree meets a
#     file already gone, `FileNotFoundError: [Errno 2] No such file or directory: 'rng_state_3.pth'` (or
#     `OSError: [Errno 39] Directory not empty`), its frames under the rotation's frame or source line.
_ROTATION_SPAN = 60


@rule("checkpoint-rotation-frame", ("in _rotate_checkpoints", "shutil.rmtree(checkpoint"),
      r'File "[^"]*trainer\.py", line \d+, in _rotate_checkpoints\b|^\s*shutil\.rmtree\(checkpoint(?:, ignore_errors=True)?\)\s*$')
def _rotation_frame(m, rec, state):
    state["rotating_line"] = rec.loc.line
    return None


@rule("checkpoint-staging-rename", ("Directory not empty: '", "No such file or directory: '"),
      r"(?<![\"'])(?:OSError|FileNotFoundError): \[Errno (?P<errno>2|39)\] (?:Directory not empty|No such file or directory): "
      r"'(?P<src>[^']*)'(?: -> '(?P<dst>[^']*)')?")
def _staging_rename(m, rec, state):
    rotating = state.get("rotating_line")
    staging = m.group("dst") is not None and "tmp-checkpoint-" in m.group("src")
    if not staging and (rotating is None or rec.loc.line - rotating > _ROTATION_SPAN):
        return None
    if not first_time(state, ("checkpoint_race",), rec.loc.line):
        return []
    if staging:
        return _err(rec, "checkpoint_save_failed", {"cause": "staging_rename_race", "saving": True,
                                                    "file": m.group("dst")})
    state.pop("rotating_line", None)
    return _err(rec, "checkpoint_save_failed", {"cause": "rotation_race", "saving": True, "file": m.group("src")})


# ENOSPC as each runtime words it (and EDQUOT, errno 122 on Linux: `[Errno 122] Disk quota exceeded`, the
# user's quota rather than the disk): Python's OSError `[Errno 28] No space left on device`, Rust's io::Error
# through safetensors (`I/O error: No space left on device (os error 28)`; older Debug form
# `IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })`). safetensors'
# `Error while serializing:` is a save by itself; anything else is a save only under a save frame.
# safetensors' Python binding (bindings/python/src/lib.rs serialize / serialize_file) wraps every error of
# the Rust writer as SafetensorError(format!("Error while serializing: {e:?}")): any I/O error there is a
# failed write (28 ENOSPC, 122 EDQUOT, 5 EIO from a network filesystem), Debug form in older releases.
_RUST_IO = (r"Error while serializing: (?:IoError\(Os \{ code: (?P<rcode>\d+), kind: (?P<rkind>\w+)"
            r"|I/O error: (?P<rmsg>[^()]*?) \(os error (?P<rcode2>\d+)\))")
_ERRNO_CAUSE = {28: "disk_full", 122: "quota", 5: "io_error"}
_ENOSPC = (r"\[Errno 28\] No space left on device|No space left on device \(os error 28\)|code: 28, kind: StorageFull"
           r"|\[Errno 122\] Disk quota exceeded|Disk quota exceeded \(os error 122\)"
           r"|(?<=\S); (?:No space left on device|Disk quota exceeded)(?= \[Op:|[ \t]*$)")
# TensorFlow's file systems turn errno into a Status with tsl's IOError (tsl/platform/errors.cc; core/platform before):
# `StrCat(context, "; ", strerror(err_number))`, ENOSPC and EDQUOT coded RESOURCE_EXHAUSTED, so a full disk reads
# `ResourceExhaustedError: {file}; No space left on device` (eager ops append ` [Op:SaveV2]`). The checkpoint writers
# (tensor_bundle.cc BundleWriter, tensor_slice_writer.cc) write `{file}.tempstate{N}` and rename it when done; a save
# op or such a file in the message is a save.
_TF_SAVE = LazyPattern(r"\.tempstate\d|\[Op:(?:SaveV2|SaveSlices|MergeV2Checkpoints)\]")
# Before tsl (TF 0.x - 1.x, core/platform/posix/error.cc IOError): `if (code == error::UNKNOWN) Status(code,
# StrCat(context, "; ", strerror(err_number))) else Status(code, context)`: an errno with a code of its own kept
# only the file. A checkpoint writer's `.tempstate` file as the whole RESOURCE_EXHAUSTED message is then a write the
# file system refused for space (ENOSPC, EDQUOT; also EMFILE / ENFILE, coded alike): printed by the op kernel
# (`W .../op_kernel.cc:993] Resource exhausted: {file}`) and raised as `ResourceExhaustedError: {file}` (also
# `ResourceExhaustedError (see above for traceback): {file}`).
_TF_TEMPSTATE = (r"(?:ResourceExhaustedError(?: \(see above for traceback\))?|Resource exhausted): ?"
                 r"(?P<tffile>[^\s;]{1,400}\.tempstate\d{1,20})[ \t]*$")


@rule(
    "checkpoint-write",
    ("PytorchStreamWriter failed", "unexpected pos", "No space left on device", "StorageFull", "Disk quota exceeded",
     "Some tensors share memory", "Error while serializing: ", ".tempstate"),
    r"PytorchStreamWriter failed writing file (?P<name>\S+?): file write failed"
    r"|" + _TF_TEMPSTATE +
    r"|unexpected pos (?P<pos>\d+) vs (?P<want>\d+)"
    r"|(?P<rust>" + _RUST_IO + r")"
    r"|(?P<enospc>" + _ENOSPC + r")"
    r"|(?P<shared>Some tensors share memory, this will lead to duplicate memory on disk)",
)
def _checkpoint_write(m, rec, state):
    if m.group("tffile"):
        if not first_time(state, ("tf_tempstate",), rec.loc.line):
            return []  # the op kernel's warning and the raised ResourceExhaustedError: one failed write
        return _err(rec, "checkpoint_save_failed", {"cause": "resource_exhausted", "saving": True, "format": "tensorflow",
                                                    "file": m.group("tffile")})
    saving = state.pop("saving_line", None)
    if m.group("rust"):
        code = int(m.group("rcode") or m.group("rcode2"))
        return _err(rec, "checkpoint_save_failed", {"cause": _ERRNO_CAUSE.get(code, "write_failed"), "errno": code,
                                                    "format": "safetensors", "saving": True})
    if m.group("enospc"):
        if "Error while serializing" in rec.text or _TF_SAVE.search(rec.text):
            saving = rec.loc.line
        if not first_time(state, ("enospc", saving is not None), rec.loc.line):
            return []
        cause = "quota" if "quota" in m.group("enospc") else "disk_full"
        if saving is None or rec.loc.line - saving > _SAVE_SPAN:
            return _err(rec, "disk_full", {"cause": cause, "saving": False})
        return _err(rec, "checkpoint_save_failed", {"cause": cause, "saving": True})
    if m.group("shared"):
        return _err(rec, "checkpoint_save_failed", {"cause": "shared_tensors", "format": "safetensors", "saving": True})
    cause = "write_failed" if m.group("name") else "short_write"
    return _err(rec, "checkpoint_save_failed", {"cause": cause, "format": "torch_zip", "saving": True,
                                                "file": m.group("name")})


# A process's own report that it is dying of a fault signal, printed by the handler the runtime installs
# before it re-raises the signal (no launcher line may follow: the excerpt can end here):
#   openucx/ucx src/ucs/debug/debug.c ucs_debug_handle_error_signal (UCX is loaded by NCCL's / Open MPI's
#     IB plugins, HPC-X, the NGC containers):
#       ucs_log_fatal_error("Caught signal %d (%s: %s%s)", signo, strsignal(signo), cause, buf)
#     printed as `[host:pid:thread:tid] Caught signal 7 (Bus error: nonexistent physical address)`, then a
#     `==== backtrace (tid: N) ====` block.
#   CPython Modules/faulthandler.c faulthandler_fatal_error: `Fatal Python error: ` + the handler's name
#     ("Segmentation fault", "Bus error", "Illegal instruction", "Floating point exception"), then the
#     `Current thread 0x... (most recent call first):` stack.
# Only the fault signals: SIGTERM / SIGINT handlers print "Caught signal 15 (Terminated)" for a normal stop.
_FAULT_SIGNALS = {4: "SIGILL", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
_FAULTHANDLER_NAMES = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Illegal instruction": "SIGILL",
                       "Floating point exception": "SIGFPE"}


@rule(
    "fatal-signal",
    ("Caught signal ", "Fatal Python error: "),
    r"Caught signal (?P<num>\d+) \((?P<desc>[^)]*)\)"
    r"|^Fatal Python error: (?P<py>Segmentation fault|Bus error|Illegal instruction|Floating point exception)\s*$",
)
def _fatal_signal(m, rec, state):
    if m.group("py"):
        signal, source, desc = _FAULTHANDLER_NAMES[m.group("py")], "faulthandler", m.group("py")
    else:
        signal, source, desc = _FAULT_SIGNALS.get(int(m.group("num"))), "ucx", m.group("desc")
        if signal is None:
            return None
    # One crash is reported by every thread that hits it (NCCL's proxy threads each print their own line).
    if not first_time(state, ("fatal_signal", signal), rec.loc.line):
        return []
    fields = {"source": source, "self_reported": True, "signal_name": desc, "shm_suspect": signal == "SIGBUS"}
    return _err(rec, "worker_failed", fields, signal=signal)


# POSIX shared memory (/dev/shm) is full: torch's MapAllocator (aten/src/ATen/MapAllocator.cpp; TH's
# THAllocator.c before 1.0) cannot size the segment a tensor crosses processes in (DataLoader workers,
# torch.multiprocessing queues): `unable to write to file </torch_15769_1517813162>` (1.x adds `: No space
# left on device (28)`), 2.x `unable to allocate shared memory(shm) for file </torch_...>: <strerror> (N)`.
# A container's /dev/shm is 64 MB unless --shm-size / --ipc=host says otherwise.
@rule(
    "shm-exhausted",
    ("unable to write to file </torch_", "unable to allocate shared memory(shm) for file"),
    r"unable to (?:write to file|allocate shared memory\(shm\) for file) <(?P<seg>/torch_[^>]*|[^>]*)>",
)
def _shm_exhausted(m, rec, state):
    if not first_time(state, ("shm",), rec.loc.line):
        return []
    return _err(rec, "shm_exhausted", {"segment": m.group("seg"), "source": "torch"})


# A job scheduler's or a wrapper's record of a process that got SIGKILL, with no word of why:
#   kubectl exec / run:  command terminated with exit code 137          (128 + 9)
#   Python subprocess (accelerate launch, kohya): CalledProcessError: Command '[...]' died with <Signals.SIGKILL: 9>.
# (docker compose's `trainer-1 exited with code 137` is left alone: `docker compose stop` ends a container
# that ignores SIGTERM the same way, so on its own it does not say the job failed.)
#   slurmctld (src/slurmctld/job_mgr.c job_complete): _job_complete: JobId=127441 WTERMSIG 9  (and `OOM failure`)
@rule(
    "exit-137",
    ("command terminated with exit code 137", "<Signals.SIGKILL: 9>"),
    r"command terminated with exit code 137\b|died with <Signals\.SIGKILL: 9>",
)
def _exit_137(m, rec, state):
    if not first_time(state, ("exit137",), rec.loc.line):
        return []
    return _err(rec, "killed", {"source": "wrapper", "exitcode": 137}, signal="SIGKILL")


# The same CalledProcessError for a child a fault signal ended (CPython Lib/subprocess.py
# CalledProcessError.__str__: "Command '%s' died with %r." % (cmd, signal.Signals(-returncode)), 3.6+; the
# old torch.distributed.launch re-raises it for the worker command it last started, so the command's
# `--local_rank=N` is not evidence of which worker crashed):
#   subprocess.CalledProcessError: Command '['/opt/tiger/conda/bin/python3', '-u', 'train_imagenet.py', ...]' died with <Signals.SIGSEGV: 11>.
@rule(
    "died-with-fault",
    ("died with <Signals.SIG",),
    r"died with <Signals\.(?P<sig>SIGSEGV|SIGBUS|SIGFPE|SIGILL): \d+>",
)
def _died_with_fault(m, rec, state):
    sig = m.group("sig")
    if not first_time(state, ("fatal_signal", sig), rec.loc.line):
        return []
    return _err(rec, "worker_failed", {"source": "wrapper", "self_reported": False}, signal=sig)


@rule(
    "slurmctld-job-complete",
    ("_job_complete: JobId=",),
    r"_job_complete: JobId=(?P<job>\S+) (?:WTERMSIG (?P<sig>\d+)|(?P<oom>OOM failure))",
)
def _slurmctld_complete(m, rec, state):
    fields = {"source": "slurmctld", "job": m.group("job")}
    if m.group("oom"):
        return _err(rec, "host_oom", fields)
    sig = int(m.group("sig"))
    name = {9: "SIGKILL", 11: "SIGSEGV", 7: "SIGBUS", 6: "SIGABRT", 4: "SIGILL", 8: "SIGFPE"}.get(sig)
    if name == "SIGKILL":
        return _err(rec, "killed", fields, signal=name)
    if name is not None:
        return _err(rec, "worker_failed", fields, signal=name, exitcode=-sig)
    return []  # SIGTERM and the like: a cancel or a time limit, reported by slurmstepd


# submitit (facebookincubator/submitit, submitit/core/job_environment.py checkpoint_and_try_requeue):
# `Caught signal SIGUSR2 on <host>: this job is preempted.` / `... this job is timed-out.`, then it
# checkpoints and requeues the job.
@rule("submitit-signal", ("this job is preempted", "this job is timed-out"),
      r"Caught signal (?P<sig>SIG\w+) on (?P<host>\S+): this job is (?P<case>preempted|timed-out)\.")
def _submitit(m, rec, state):
    kind = "slurm_preempted" if m.group("case") == "preempted" else "slurm_time_limit"
    return _err(rec, kind, {"source": "submitit", "node": m.group("host"), "signal_name": m.group("sig")})


# systemd's record of its unit's OOM kill (src/core/unit.c unit_check_oom / service.c): `trainer.service: A process
# of this unit has been killed by the OOM killer.` (systemd-oomd or the kernel; newer also `A process has been
# killed by the OOM killer.`) and `trainer.service: Failed with result 'oom-kill'.`
@rule(
    "systemd-oom",
    ("killed by the OOM killer", "Failed with result 'oom-kill'"),
    r"(?<![\w@.\-])(?P<unit>[\w@.\-]+\.(?:service|scope|slice)): (?:A process (?:of this unit )?has been killed by the OOM killer"
    r"|Failed with result 'oom-kill')",
)
def _systemd_oom(m, rec, state):
    if not first_time(state, ("systemd_oom", m.group("unit")), rec.loc.line):
        return []
    return _err(rec, "host_oom", {"source": "systemd", "unit": m.group("unit"), "cgroup": True})


# The user-space OOM killers act before the kernel does, on memory pressure:
#   systemd-oomd (src/oom/oomd-util.c):  oomd attempting to kill 113 with KILL
#                                         Killed /user.slice/.../app.scope due to memory pressure for ... being 74.23% > 20.00% ...
#   earlyoom (kill.c):                    sending SIGKILL to process 2595764 uid 0 "python": badness 711, VmRSS 52562 MiB
@rule(
    "userspace-oom",
    ("oomd attempting to kill", "due to memory pressure for", "\": badness"),
    r"oomd attempting to kill (?P<pid>\d+) with KILL|Killed (?P<cg>/\S+) due to memory pressure for"
    r"|sending SIG(?:TERM|KILL) to process (?P<epid>\d+) uid \d+ \"(?P<comm>[^\"]*)\": badness",
)
def _userspace_oom(m, rec, state):
    source = "earlyoom" if m.group("epid") else "systemd-oomd"
    pid = m.group("pid") or m.group("epid")
    if not first_time(state, ("uoom", source), rec.loc.line):
        return []
    return _err(rec, "host_oom", {"source": source, "pid": int(pid) if pid else None, "process": m.group("comm"),
                                  "cgroup_path": m.group("cg")})


# Kubernetes took the pod away for someone else or for the node's sake, not for anything the pod did:
#   scheduler preemption (pkg/scheduler/framework/preemption, reason Preempted):
#       Preempted by pod <uid> on node <node>        (<= 1.2x: "by <namespace>/<name> on node <node>")
#   graceful node shutdown (pkg/kubelet/nodeshutdown, reason Terminated; spot/preemptible VMs reclaimed):
#       Pod was terminated in response to imminent node shutdown.
@rule(
    "k8s-preempted",
    ("Preempted by", "in response to imminent node shutdown"),
    r"Preempted\s+by (?:pod )?(?P<by>\S+) on node (?P<node>\S+)|(?P<shutdown>Pod was terminated in response to imminent node shutdown)",
)
def _k8s_preempted(m, rec, state):
    cause = "node_shutdown" if m.group("shutdown") else "preemption"
    if not first_time(state, ("k8s_preempted", cause), rec.loc.line):
        return []
    return _err(rec, "pod_preempted", {"source": "kubernetes", "cause": cause, "node": m.group("node"),
                                       "preemptor": m.group("by")})


# EIO (errno 5): the storage under the file failed the read or write: a network file system (NFS, Lustre,
# a FUSE mount such as DBFS or s3fs) or a block device that returned an error. Python: `OSError: [Errno 5]
# Input/output error: 'path'` (Megatron's async checkpoint writer logs the bare `[Errno 5] Input/output error`),
# Rust `Input/output error (os error 5)`, TensorFlow's IOError `<path>; Input/output error`.
@rule(
    "storage-eio",
    ("Input/output error",),
    r"\[Errno 5\] Input/output error(?::[ \t]{0,8}(?P<path>'[^'\n]{0,1024}'|\S{1,1024}))?|Input/output error \(os error 5\)"
    r"|(?<!\S)(?P<tfpath>/[^\s;]{1,4096}); Input/output error\b",
)
def _storage_eio(m, rec, state):
    if not first_time(state, ("eio",), rec.loc.line):
        return []
    path = (m.group("path") or m.group("tfpath") or "").strip("'") or None
    saving = state.get("saving_line") is not None or "checkpoint" in rec.text.lower()
    return _err(rec, "storage_io_error", {"errno": 5, "path": path, "saving": saving})


# EROFS (errno 30): a write to a file system mounted read-only: a path on a read-only mount (a container
# image layer or Singularity image, a ConfigMap / readOnly volume, macOS's sealed system volume at `/`), or
# a disk the kernel switched to read-only after errors. Python: `OSError: [Errno 30] Read-only file system:
# 'path'`; Rust: `Read-only file system (os error 30)`; the kernel's own switch (fs/ext4/super.c
# ext4_handle_error, fs/xfs): `EXT4-fs (sda1): Remounting filesystem read-only` (6.x: `Remounting filesystem
# read-only` the same). The mount notice `re-mounted. Opts: errors=remount-ro` only names the policy.
@rule(
    "read-only-fs",
    ("Read-only file system", "Remounting filesystem read-only"),
    r"\[Errno 30\] Read-only file system(?::[ \t]{0,8}(?P<path>'[^'\n]{0,1024}'|\S{1,1024}))?|Read-only file system \(os error 30\)"
    r"|(?P<fs>EXT4-fs|XFS|BTRFS)[^:]{0,40}?\((?P<dev>[\w\-./]+)\)[:]? Remounting filesystem read-only",
)
def _read_only_fs(m, rec, state):
    if not first_time(state, ("erofs",), rec.loc.line):
        return []
    path = (m.group("path") or "").strip("'") or None
    return _err(rec, "read_only_fs", {"errno": 30, "path": path, "device": m.group("dev"),
                                      "kernel": m.group("fs") is not None})


# ESTALE (errno 116 on Linux): the NFS (or other network file system) server no longer knows the file
# this client holds a handle to: another node deleted or replaced it, or the export was remounted.
# Python: `OSError: [Errno 116] Stale file handle: 'path'`; h5py/HDF5: `errno = 116, error message =
# 'Stale file handle'`; Rust: `Stale file handle (os error 116)`.
@rule(
    "stale-file-handle",
    ("Stale file handle",),
    r"(?:\[Errno 116\] Stale file handle(?::\s*(?P<path>.+?))?\s*$|errno = 116, error message = 'Stale file handle'"
    r"|Stale file handle \(os error 116\)|(?P<torch>(?:read|write)\(\): fd \d+ failed with Stale file handle))",
)
def _stale_handle(m, rec, state):
    # torch/csrc/serialization.cpp doRead / doWrite (torch.load's legacy reader, the storages' _set_from_file /
    # _write_file): `"read(): fd ", fildes, " failed with ", strerror(err)` (c10::utils::str_error in later releases),
    # so ESTALE under a load reads `read(): fd 33 failed with Stale file handle`: the file system's, not the file's
    if not first_time(state, ("estale",), rec.loc.line):
        return []
    path = (m.group("path") or "").strip().strip("'\"") or None
    fields = {"errno": 116, "path": path}
    if m.group("torch"):
        fields["via"] = "torch serialization (read()/write() on an open checkpoint file)"
    return _err(rec, "stale_file_handle", fields)


# The kubelet's eviction of a pod under node pressure (kubernetes pkg/kubelet/eviction/helpers.go:
# Reason "Evicted"; nodeLowMessageFmt "The node was low on resource: %v. ", nodeConditionMessageFmt "The
# node had condition: %v. ", containerMessageFmt "Container %s was using %s, which exceeds its request of
# %s. ", the ephemeral-storage messages; <= 1.8 "The node was low on resource: %v."), as kubectl shows it:
# describe's `Message:`, the events table, and get pods' STATUS column `Evicted`.
_EVICT_MSG = LazyPattern(
    r"The node (?:was low on resource: (?P<res>\[?[\w.\-/]+\]?)|had condition: (?P<cond>\[[\w, ]+\]))"
    r"|(?P<es>Pod ephemeral local storage usage exceeds the total limit of containers|exceeded its local ephemeral storage limit"
    r"|Usage of EmptyDir volume \S+ exceeds the limit)"
)


@rule(
    "k8s-evicted",
    ("The node was low on resource:", "The node had condition:", "ephemeral local storage", "Usage of EmptyDir volume"),
    _EVICT_MSG.pattern,
)
def _k8s_evicted(m, rec, state):
    if m.group("res") or m.group("cond"):
        resource = (m.group("res") or m.group("cond")).rstrip(".").strip("[]")
    elif m.group("es"):
        resource = "ephemeral-storage"
    else:
        resource = None  # kubectl get pods: only the status
    resource = {"MemoryPressure": "memory", "DiskPressure": "disk"}.get(resource or "", resource)
    used = re.search(r"Container (\S+) was using (\S+), which exceeds its request of (\S+?)\.", rec.text)
    if not first_time(state, ("evicted", resource), rec.loc.line):
        return []
    fields = {"source": "kubernetes", "resource": resource}
    if used:
        fields.update(container=used.group(1), using=used.group(2), request=used.group(3))
    return _err(rec, "pod_evicted", fields)


# kubectl get pods: the STATUS column of an evicted pod (NAME  READY  STATUS  RESTARTS  AGE).
@rule("k8s-evicted-status", ("Evicted",), r"[ \t]*\S+[ \t]+\d+/\d+[ \t]+Evicted[ \t]+\d+", match_start=True)
def _k8s_evicted_status(m, rec, state):
    if not first_time(state, ("evicted", None), rec.loc.line):
        return []
    return _err(rec, "pod_evicted", {"source": "kubernetes", "resource": None})


# slurmstepd's own memory enforcement (jobacct_gather polling, JobAcctGatherParams without cgroup
# enforcement: src/common/slurm_jobacct_gather.c jobacct_gather_handle_mem_limit), by release:
#   error("Job %u exceeded memory limit (%"PRIu64" > %"PRIu64"), being killed")      (<= 17.x; `Step %u.%u ...`)
#   error("%ps exceeded memory limit (%"PRIu64" > %"PRIu64"), being killed")        (20.x+: `StepId=123.0 ...`)
#   and `exceeded virtual memory limit` for the vsize limit; then slurmstepd's / srun's
#   `Exceeded job memory limit` / `Exceeded step memory limit` once the step was killed for it.
# Not a kill: task/cgroup's `Exceeded job memory limit at some point.` / `Exceeded step memory limit at
# some point.` (memory.failcnt > 0: page cache reclaimed at the limit; the job may well have finished).
@rule(
    "slurm-mem-limit",
    ("exceeded memory limit (", "exceeded virtual memory limit (", "Exceeded job memory limit", "Exceeded step memory limit"),
    r"(?P<who>(?:Job|Step) [\d.]+|(?:StepId|JobId)=\S+) exceeded (?P<virt>virtual )?memory limit \((?P<used>\d+) > (?P<limit>\d+)\), being killed"
    r"|Exceeded (?P<what>job|step) memory limit(?! at some point)",
)
def _slurm_mem_limit(m, rec, state):
    if not first_time(state, ("slurm_mem_limit",), rec.loc.line):
        return []
    fields = {"source": "slurm", "limit_kind": "virtual" if m.group("virt") else "memory"}
    if m.group("used"):
        used, limit = int(m.group("used")), int(m.group("limit"))
        fields.update(used_kb=used, limit_kb=limit, step=m.group("who"))
    return _err(rec, "host_oom", fields)


# NVML cannot talk to the loaded kernel module: the user-space driver libraries (libnvidia-ml.so and
# libcuda.so, upgraded by a package update) differ from the nvidia.ko still loaded (a reboot or module
# reload is pending). NVML's nvmlErrorString(NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18), as each caller prints it:
#   nvidia-smi (exit code 18)    Failed to initialize NVML: Driver/library version mismatch
#                                (newer drivers add `NVML library version: 550.144` on the next line)
#   nvidia-container-cli         nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown
#   pynvml                       pynvml.nvml.NVMLError_LibRmVersionMismatch: Driver/library version mismatch
# and the kernel's side of it (open-gpu-kernel-modules kernel-open/nvidia/nv.c, nvidia_ioctl version check):
#   NVRM: API mismatch: the client has the version 415.27, but
#   NVRM: this kernel module has the version 390.129.  Please ...   (one dmesg record, wrapped)
@rule(
    "nvml-version-mismatch",
    ("Driver/library version mismatch", "driver/library version mismatch", "API mismatch: the client has the version"),
    r"(?i:(?P<who>nvml error|NVML|NVMLError_LibRmVersionMismatch)\W{1,3}driver/library version mismatch)"
    r"|NVRM: API mismatch: the client has the version (?P<client>[\d.\-]+), but(?:\s+NVRM: this kernel module has the version (?P<kmod>[\d.\-]+))?",
)
def _nvml_mismatch(m, rec, state):
    if not first_time(state, ("nvml_mismatch",), rec.loc.line):
        return []
    fields = {"cuda_error": "Driver/library version mismatch", "code": None, "source": "kernel" if m.group("client") else "nvml",
              "detail": "the NVIDIA user-space driver libraries do not match the loaded kernel module"}
    if m.group("client"):
        fields.update(client_version=m.group("client"), kernel_module_version=m.group("kmod"))
    return _err(rec, "cuda_driver_mismatch", fields)


# An uncorrectable PCIe error the kernel could not recover the GPU from (drivers/pci/pcie/err.c
# report_error_detected: the nvidia driver registers no pci_error_handlers, so AER logs
# `<driver> <BDF>: AER: can't recover (no error_detected callback)` for it and then `AER: device recovery
# failed` on the port): the GPU is gone from the driver until a reset, as when it falls off the bus.
# Corrected errors (`AER: Corrected error received`) are retried by the link itself and are no event. Older
# kernels (<= 4.x, drivers/pci/pcie/aer/aerdrv_core.c report_error_detected) word it `nvidia 0000:02:00.0:
# device has no AER-aware driver`.
@rule(
    "pcie-aer-gpu-lost",
    ("AER: can't recover", "AER: Can't recover", "device has no AER-aware driver"),
    r"(?<![\w-])nvidia (?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]): "
    r"(?:AER: [Cc]an't recover \(no error_detected callback\)|device has no AER-aware driver)",
)
def _pcie_gpu_lost(m, rec, state):
    if not first_time(state, ("pcie_gpu_lost", m.group("pci")), rec.loc.line):
        return []
    return _err(rec, "gpu_fallen_off_bus", {"pci": m.group("pci"), "source": "pcie-aer",
                                            "detail": "uncorrectable PCIe error, the kernel could not recover the GPU"})


# The process ran out of file descriptors (EMFILE, errno 24: its RLIMIT_NOFILE, `ulimit -n`; ENFILE, 23:
# the system's file table). In training it is nearly always torch.multiprocessing's default
# file_descriptor sharing strategy: every tensor a DataLoader worker sends holds a descriptor
# (torch/multiprocessing/reductions.py reduce_storage -> DupFd) until it is freed. As each layer says it:
#   Python      OSError: [Errno 24] Too many open files[: 'path']      ([Errno 23] Too many open files in system)
#   torch libshm / MapAllocator  unable to open shared memory object </torch_...> in read-write mode: Too many open files (24)
#   torch reductions rebuild_storage_fd (the fds did not arrive)   RuntimeError: received 0 items of ancdata
#   Rust io::Error   Too many open files (os error 24)
@rule(
    "fd-exhausted",
    ("Too many open files", "received 0 items of ancdata"),
    r"\[Errno (?P<errno>2[34])\] Too many open files(?P<sys> in system)?|Too many open files(?P<sys2> in system)? (?:\((?P<code>2[34])\)|\(os error (?P<rust>2[34])\))"
    r"|(?P<ancdata>received 0 items of ancdata)",
)
def _fd_exhausted(m, rec, state):
    text = rec.text
    if text.count("`", 0, m.start()) % 2 == 1 and "`" in text[m.end():]:
        # advice that quotes the error (vLLM's system_utils: `Found ulimit of 20000 and failed to automatically
        # increase ... This can cause fd limit errors like `OSError: [Errno 24] Too many open files`.`)
        return None
    if not first_time(state, ("fd_exhausted",), rec.loc.line):
        return []
    errno = m.group("errno") or m.group("code") or m.group("rust")
    fields = {"errno": int(errno) if errno else None, "system_wide": bool(m.group("sys") or m.group("sys2")),
              "source": "torch-fd-sharing" if m.group("ancdata") or "reduction" in rec.text else None}
    return _err(rec, "too_many_open_files", fields)



# No usable GPU, said below the framework (the framework then only sees `no CUDA-capable device`):
#   nvidia-smi (nvml DRIVER_NOT_LOADED):  NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
#                                         driver. Make sure that the latest NVIDIA driver is installed and running.
#   libnvidia-container (the --gpus / CDI hook; src/cli: "%s error: %s" per stage: initialization, detection,
#   device, container, mount, ldcache, requirement ...), e.g.
#       nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: ...
#       nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown
#       nvidia-container-cli: device error: 1: unknown device            (a GPU index the host does not have)
#       nvidia-container-cli: container error: cgroup subsystem devices not found   (cgroup v2, an old release)
#       nvidia-container-cli: requirement error: unsatisfied condition: cuda>=11.6, please update your driver ...
#         (the image needs a newer driver: a driver mismatch, not a missing GPU)
#   Docker (moby daemon/devices.go, no device driver registered for the capability; older releases leave out
#   the empty name):  docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].
#   the kernel module (open-gpu-kernel-modules kernel-open/nvidia/nv.c, nv-pci.c):
#       NVRM: No NVIDIA graphics adapter probed!   (newer: NVRM: No NVIDIA GPU found.)
#       NVRM: The NVIDIA probe routine was not called for 3 device(s).   (nouveau or another driver owns them)
#       NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)   (the GPU did not initialise)
#   TensorFlow's CUDA diagnostics after its cuInit failed (tensorflow/stream_executor/cuda/cuda_diagnostics.cc,
#   later xla/stream_executor/cuda/cuda_diagnostics.cc, Diagnostician::LogDiagnosticInformation; TensorFlow then
#   runs on the CPU):  kernel driver does not appear to be running on this host (HOST): /proc/driver/nvidia/version
#   does not exist.  The `failed call to cuInit: ...` line before it is the cuda parser's where it carries a CUDA
#   error string (`CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected`); TensorFlow 2.4's `UNKNOWN ERROR
#   (303)` names nothing, and this line says why.
_NO_GPU_KINDS = (
    ("smi", r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver",
     "nvidia-smi cannot reach the NVIDIA kernel driver (not loaded, or not passed into the container)"),
    ("docker", r"could not select device driver (?:\"(?P<drv>[^\"]*)\" )?with capabilities: \[\[gpu",
     "Docker has no GPU device driver: the NVIDIA container toolkit is not installed or not configured"),
    ("probe", r"NVRM: (?:No NVIDIA graphics adapter probed!|No NVIDIA GPU found)",
     "the NVIDIA kernel module found no GPU it can drive"),
    ("owned", r"NVRM: The NVIDIA probe routine was not called for (?P<ndev>\d+) device",
     "another kernel driver (nouveau, a framebuffer driver) owns the GPUs"),
    ("init", r"NVRM: GPU (?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]): RmInitAdapter failed!",
     "the driver could not initialise the GPU"),
    ("tfdiag", r"kernel driver does not appear to be running on this host \([^)\n]*\): /proc/driver/nvidia/version does not exist",
     "TensorFlow's cuInit failed and this host (or container) has no NVIDIA kernel driver: the process runs on the CPU"),
)
_NO_GPU = LazyPattern("|".join(f"(?P<k_{name}>{rx})" for name, rx, _ in _NO_GPU_KINDS))
_NO_GPU_DETAIL = {name: detail for name, _, detail in _NO_GPU_KINDS}


@rule(
    "no-gpu-below",
    ("couldn't communicate with the NVIDIA driver", "communicate with the NVIDIA driver", "could not select device driver",
     "No NVIDIA graphics adapter probed", "No NVIDIA GPU found", "probe routine was not called", "RmInitAdapter failed!",
     "kernel driver does not appear to be running"),
    _NO_GPU.pattern,
)
def _no_gpu_below(m, rec, state):
    kind = next(name for name, _, _ in _NO_GPU_KINDS if m.group(f"k_{name}"))
    if not first_time(state, ("no_gpu", kind), rec.loc.line):
        return []
    text = {"smi": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
            "docker": "could not select device driver with capabilities: [[gpu]]",
            "probe": "NVRM: no NVIDIA GPU probed", "owned": "NVRM: the NVIDIA probe routine was not called",
            "init": "NVRM: RmInitAdapter failed",
            "tfdiag": "kernel driver does not appear to be running on this host"}[kind]
    fields = {"cuda_error": text, "code": None, "detail": _NO_GPU_DETAIL[kind], "source": kind}
    if kind == "init":
        fields["pci"] = m.group("pci")
    return _err(rec, "cuda_no_device", fields)


@rule(
    "nvidia-container-cli",
    ("nvidia-container-cli: ",),
    r"nvidia-container-cli: (?P<stage>[a-z]+) error: (?P<what>[^\n]*)",
)
def _container_cli(m, rec, state):
    # inside runc's error chain the hook's stderr arrives escaped (`unknown device\\\\n\\\"\"": unknown.`):
    # the message ends at its first backslash or quote
    what = re.split(r'\\|"', m.group("what"), maxsplit=1)[0].strip().rstrip(".")
    if what.endswith(": unknown"):
        what = what[: -len(": unknown")]
    what = what.rstrip(": ")
    if "version mismatch" in what.lower():
        return None  # the NVML mismatch rule's
    if not first_time(state, ("container_cli", m.group("stage")), rec.loc.line):
        return []
    if m.group("stage") == "requirement":
        cond = re.search(r"unsatisfied condition: ([^,]+)", what)
        return _err(rec, "cuda_driver_mismatch", {
            "cuda_error": f"nvidia-container-cli: requirement error: {cond.group(1) if cond else what}", "code": None,
            "source": "nvidia-container-cli",
            "detail": "the image needs a newer NVIDIA driver than the host has (its CUDA requirement is not met)"})
    return _err(rec, "cuda_no_device", {
        "cuda_error": f"nvidia-container-cli: {m.group('stage')} error: {what}", "code": None, "source": "nvidia-container-cli",
        "detail": "the NVIDIA container hook could not give the container the GPU driver"})


# nvidia-smi -q's row remapper block (A100 and later; NVIDIA's GPU memory error management): rows that had an
# uncorrectable error are remapped at the next GPU reset. `Pending : Yes` means a reset is owed; `Remapping
# Failure Occurred : Yes` means the bank ran out of spare rows (an RMA criterion):
#     Remapped Rows
#         Correctable Error                 : 0
#         Uncorrectable Error               : 4
#         Pending                           : Yes
#         Remapping Failure Occurred        : No
@rule(
    "remapped-rows",
    ("Remapped Rows", ": Yes"),
    r"[ \t]*(?:(?P<head>Remapped Rows)[ \t]*$|(?P<what>Pending|Remapping Failure Occurred)[ \t]*:[ \t]*Yes[ \t]*$)",
    match_start=True,
)
def _remapped_rows(m, rec, state):
    if m.group("head"):
        state["remap_head"] = rec.loc.line
        return []
    head = state.get("remap_head")
    if head is None or not 0 < rec.loc.line - head <= 8:
        return None
    what = "failure" if m.group("what").startswith("Remapping") else "pending"
    if not first_time(state, ("remap", what), rec.loc.line):
        return []
    return _err(rec, "ecc_error", {"source": "nvidia-smi", "remap": what, "cuda_error": "row remapping " + what})


# The scheduler found no node for the pod (kubernetes pkg/scheduler/framework FitError.Error(), the
# FailedScheduling event): `0/6 nodes are available: 6 Insufficient nvidia.com/gpu.` (1.17+, with reasons such as
# `node(s) didn't match Pod's node affinity/selector`, `node(s) had untolerated taint {...}`; 1.24+ may add
# ` preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.`); <= 1.9:
# `No nodes are available that match all of the predicates: Insufficient nvidia.com/gpu (1).`
@rule(
    "k8s-unschedulable",
    ("nodes are available:", "No nodes are available that match all of"),
    r"(?<![\d/])0/(?P<n>\d+) nodes are available: (?P<why>[^\n]*)"
    r"|No nodes are available that match all of (?:the )?(?:following )?predicates::? ?(?P<old>[^\n]*)",
)
def _k8s_unschedulable(m, rec, state):
    why = (m.group("why") or m.group("old") or "").split(" preemption:")[0].strip().rstrip(".")
    resources = sorted(set(re.findall(r"Insufficient ([\w.\-/]+)", why)))
    if not first_time(state, ("unschedulable", tuple(resources)), rec.loc.line):
        return []
    return _err(rec, "pod_unschedulable", {"source": "kubernetes", "nodes": int(m.group("n")) if m.group("n") else None,
                                           "resources": resources, "reasons": why,
                                           "resource": ", ".join(resources) if resources else "a matching node"})



# The kernel's OOM report starts with the allocating task (mm/oom_kill.c dump_header: "%s invoked oom-killer:
# gfp_mask=%#x(%pGg), order=%d, oom_score_adj=%hd"; older kernels `..., oom_adj=0`, newer LTP-style `task:pid
# invoked ...`): an excerpt cut before the `Killed process` line still shows the OOM killer ran.
@rule("kernel-oom-invoked", ("invoked oom-killer",), r"(?<!\S)(?P<comm>[^\s:]+)(?::\d+)? invoked oom-killer: gfp_mask=")
def _oom_invoked(m, rec, state):
    # Held back: the report's `Killed process` / `oom-kill:` line, when the excerpt has it, is the event
    # (it names the victim); flush() releases this one at the end of an excerpt cut before the kill.
    if not first_time(state, ("oom_invoked",), rec.loc.line):
        return []
    earlier = state.pop("pending", None)
    state["pending"] = _err(rec, "host_oom", {"source": "kernel", "invoked_by": m.group("comm"), "cgroup": None})
    return [earlier] if earlier is not None else []


# NVML could not start for another reason than a version mismatch (nvmlErrorString, after nvidia-smi's
# `Failed to initialize NVML: `): `Unknown Error` (in a container: its device cgroup lost the GPU nodes, e.g.
# after `systemctl daemon-reload` with the systemd cgroup driver), `Driver Not Loaded`, `Insufficient
# Permissions`; and nvidia-smi's own `NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.` and
# `No devices were found` (the driver runs but owns no GPU).
_NVML_WHY = {
    "unknown error": "NVML cannot open the GPU devices (in a container: the device cgroup lost them, e.g. after a systemd daemon-reload)",
    "driver not loaded": "the NVIDIA kernel driver is not loaded",
    "insufficient permissions": "the process may not open the GPU devices",
}


@rule(
    "nvml-unusable",
    ("Failed to initialize NVML: ", "couldn't find libnvidia-ml.so", "No devices were found"),
    r"Failed to initialize NVML: (?P<why>(?!Driver/library version mismatch)\w[^\n]*)"
    r"|(?P<nolib>NVIDIA-SMI couldn't find libnvidia-ml\.so library)|^\s*(?P<nodev>No devices were found)\s*$",
)
def _nvml_unusable(m, rec, state):
    if not first_time(state, ("nvml_unusable",), rec.loc.line):
        return []
    if m.group("nolib"):
        text, detail = "NVIDIA-SMI couldn't find libnvidia-ml.so", "the NVIDIA user-space driver libraries are missing"
    elif m.group("nodev"):
        text, detail = "nvidia-smi: No devices were found", "the NVIDIA driver is loaded but has no GPU"
    else:
        why = m.group("why").strip()
        text = f"Failed to initialize NVML: {why}"
        detail = _NVML_WHY.get(why.lower().rstrip("."), "NVML could not initialise")
    return _err(rec, "cuda_no_device", {"cuda_error": text, "code": None, "detail": detail, "source": "nvml"})


# The kernel's own record of a failed disk or filesystem (the errno-5 a process then gets is storage_eio's):
#   block/blk-core.c  blk_update_request: I/O error, dev nvme0n1, sector 32776 op 0x1:(WRITE) flags ...   (<= 5.x)
#                     (5.x+: blk_print_req_error `I/O error, dev sda, sector ...`; also `critical medium error`)
#   fs/buffer.c       Buffer I/O error on dev sda, logical block 0, async page read
#   ext4 __ext4_error EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm python: ...
#   xfs               XFS (sdb1): metadata I/O error in "xfs_trans_read_buf_map" at daddr 0x0 len 8 error 5
# The floppy and CD-ROM devices of virtual machines (fd0, sr0) log such lines at every probe: noise.
@rule(
    "kernel-storage-error",
    (" error, dev ", "Buffer I/O error on dev", "EXT4-fs error (device", "metadata I/O error in"),
    r"(?:blk_update_request: )?(?:I/O|critical medium|critical target|critical nexus) error, dev (?P<dev>\w+), sector \d+"
    r"|Buffer I/O error on dev (?P<dev2>\w+), logical block"
    r"|EXT4-fs error \(device (?P<dev3>[\w\-]+)\)"
    r"|XFS \((?P<dev4>[\w\-]+)\): metadata I/O error in",
)
def _kernel_storage(m, rec, state):
    dev = m.group("dev") or m.group("dev2") or m.group("dev3") or m.group("dev4")
    if re.fullmatch(r"(?:fd|sr)\d+", dev):
        return []
    if not first_time(state, ("kernel_storage", dev), rec.loc.line):
        return []
    return _err(rec, "storage_io_error", {"errno": 5, "path": None, "device": dev, "source": "kernel", "saving": False})



# kubectl describe pod: a container that ended on a signal (exit code 128 + N; pkg/kubectl describe
# `Exit Code:\t%d` under `State:` / `Last State:  Terminated`, after its `Reason:`). 137 is SIGKILL with the
# reason `Error` (a liveness-probe kill, the node's OOM killer outside the container's own limit, a
# preemption), 139 / 135 / 132 / 136 a native crash. With `Reason: OOMKilled` the k8s-oomkilled rule has
# already said why.
_K8S_SIGNAL_EXIT = {137: "SIGKILL", 139: "SIGSEGV", 135: "SIGBUS", 132: "SIGILL", 136: "SIGFPE"}


@rule("k8s-exit-signal", ("Exit Code:",), r"[ \t]*Exit Code:[ \t]+(?P<code>1[3-5]\d)[ \t]*$", match_start=True)
def _k8s_exit_signal(m, rec, state):
    code = int(m.group("code"))
    signal = _K8S_SIGNAL_EXIT.get(code)
    if signal is None:
        return []
    oom = state.get("seen", {}).get(("k8s_oomkilled",))
    if oom is not None and 0 < rec.loc.line - oom <= 3:
        return []  # `Reason: OOMKilled` right above: host_oom already
    if not first_time(state, ("k8s_exit", code), rec.loc.line):
        return []
    fields = {"source": "kubernetes", "exitcode": code}
    if signal == "SIGKILL":
        return _err(rec, "killed", fields, signal=signal)
    return _err(rec, "worker_failed", fields, signal=signal, exitcode=code - 256)


# Flyte's Kubernetes plugin (flyteplugins go/tasks/pluginmachinery/flytek8s/pod_helper.go, DemystifyFailure and
# DeterminePrimaryContainerPhase; flyte/flyteplugins/... after the monorepo move) reports a failed task pod's
# container as `fmt.Sprintf("\r\n[%v] terminated with exit code (%v). Reason [%v]. Message: \n%v.", name,
# exitCode, reason, message)`: Reason [OOMKilled] is the cgroup OOM kill; 137 under another reason (`Error`,
# often an OOM kill of a child the container's reason does not show, or the node's termination) is a SIGKILL
# with no word of why, as kubectl describe's `Exit Code: 137`; 139 / 135 / 132 / 136 a native crash.
@rule("flyte-container-exit", ("] terminated with exit code (",),
      r"\[(?P<name>[^\[\]\s]{1,200})\] terminated with exit code \((?P<code>-?\d{1,4})\)\. Reason \[(?P<reason>[^\[\]]{0,100})\]")
def _flyte_container_exit(m, rec, state):
    code, reason = int(m.group("code")), m.group("reason").strip()
    fields = {"source": "flyte", "exitcode": code, "container": m.group("name")}
    if "OOMKilled" in reason:
        if not first_time(state, ("flyte_oomkilled", m.group("name")), rec.loc.line):
            return []
        return _err(rec, "host_oom", {**fields, "cgroup": True})
    signal = _K8S_SIGNAL_EXIT.get(code)
    if signal is None or not first_time(state, ("flyte_exit", m.group("name"), code), rec.loc.line):
        return []
    if signal == "SIGKILL":
        return _err(rec, "killed", fields, signal=signal)
    return _err(rec, "worker_failed", fields, signal=signal, exitcode=code - 256)


PARSER = Parser(
    name="system",
    framework="system",
    priority=45,
    description="kernel OOM killer, Slurm and srun, shell and IDE kills, Ray worker deaths, DataLoader workers, checkpoints, disk full, NFS stale handles, Kubernetes evictions and scheduling, fatal-signal reports, NVML / container-hook / NVIDIA kernel module GPU availability, PCIe AER, kernel storage errors, file-descriptor limits",
    rules=[_kernel, _kernel_constraint, _k8s_oomkilled, _runc_init_oom, _slurm_oom, _slurm_cancelled, _slurm_node_fail, _srun_task, _srun_step_aborted, _killed, _shell_crash, _zsh_crash, _bar_killed, _ide_exit,
           _ray_oom_kills, _ray_worker_died, _dataloader, _save_frame, _tf_save_hook, _tf_save_op_failed, _rotation_frame, _staging_rename, _checkpoint_write, _shm_exhausted, _exit_137, _died_with_fault, _slurmctld_complete, _submitit,
           _systemd_oom, _userspace_oom, _k8s_preempted, _storage_eio, _read_only_fs, _stale_handle, _k8s_evicted, _k8s_evicted_status, _checkpoint,
           _fatal_signal, _slurm_mem_limit, _nvml_mismatch, _pcie_gpu_lost, _fd_exhausted,
           _no_gpu_below, _container_cli, _remapped_rows, _k8s_unschedulable,
           _oom_invoked, _nvml_unusable, _kernel_storage, _k8s_exit_signal, _flyte_container_exit],
)
