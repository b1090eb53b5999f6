"""The job's command could not be started: the shell, Slurm or mpirun found no such executable.

Templates, from the tools' sources:
  bash (execute_cmd.c, "%s: command not found", prefixed by the shell name and, in a script or
  `bash -c`, by "line N:"):
      bash: torchrun: command not found
      ./run.sh: line 12: torchrun: command not found        -bash: srun: command not found
  bash in a zh_CN locale (po/zh_CN.po: "%s：未找到命令", "行"):  run.sh: 行 84: torchrun：未找到命令
  dash, Debian's /bin/sh (error.c / exec.c: "%s: %d: %s: not found"):
      /bin/sh: 1: torchrun: not found          sh: 1: /opt/env/bin/torchrun: not found
      train.sh: 1: srun: not found
  zsh (exec.c): zsh: command not found: torchrun
  bash, a command given by path that does not exist or cannot be executed (execute_cmd.c file_error):
      bash: /opt/conda/bin/python3: No such file or directory      ./run.sh: line 3: ./train.sh: Permission denied
  CPython (Modules/main.c, "%ls: can't open file %R: [Errno %d] %s"): the job's script is not there
      python: can't open file 'tensorflow_mnist.py': [Errno 2] No such file or directory
  slurmstepd (src/slurmd/slurmstepd/exec_wait.c / task.c, error("execve(): %s: %m", argv[0])):
      slurmstepd: error: execve(): torchrun: No such file or directory
  Open MPI / PRRTE (help-orterun.txt, help-prte.txt):
      mpirun was unable to launch the specified application as it could not access
      mpirun was unable to find the specified executable file, and therefore
      mpirun was unable to start the specified application as it encountered an   (proc-failed-to-start)
      Open MPI tried to fork a new process via the "execve" system call but failed.  (help-odls-default.txt)

Only a missing launcher, interpreter or job script counts (torchrun, python, deepspeed, srun, mpirun,
a *.sh / *.py): a helper a setup script probes for (`git`, `nvidia-smi`) is often absent on a
healthy run. Slurm's execve() and mpirun's report are about the job's own executable by definition.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

# Launchers and interpreters a training or serving job is started with.
_LAUNCHERS = LazyPattern(
    r"(?:torchrun|python[\d.]*|deepspeed|accelerate|srun|sbatch|salloc|mpirun|mpiexec|prterun|horovodrun|"
    r"ray|colossalai|llamafactory-cli|vllm|sglang|jsrun|aprun|conda|singularity|apptainer|docker)"
)


def _error(rec, cmd: str, how: str) -> ErrorEvent:
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="system", error="command_not_found",
                      message=rec.text.strip(), fields={"command": cmd, "source": how}, exitcode=127)


def _launcher(cmd: str) -> bool:
    name = cmd.rsplit("/", 1)[-1]
    return name.endswith((".sh", ".py")) or _LAUNCHERS.fullmatch(name) is not None


@rule(
    "shell-command-not-found",
    ("command not found", ": not found", "未找到命令"),
    r"(?:\bline \d{1,9}|行 \d{1,9}|(?<![\w./\-])[\w./\-]{0,255}sh)[:：] (?:\d{1,9}: )?(?P<cmd>[^\s:：]{1,512})"
    r"(?:: command not found|: not found|[:：] ?未找到命令)[ \t]*$"
    r"|\bzsh: command not found: (?P<zcmd>\S+)",
)
def _not_found(m, rec, state):
    cmd = m.group("cmd") or m.group("zcmd")
    if not _launcher(cmd):
        return None
    if not first_time(state, ("not_found", cmd), rec.loc.line):
        return []
    return _error(rec, cmd, "shell")


@rule("shell-no-such-file", ("No such file or directory", "Permission denied"),
      r"(?:\bline \d{1,9}|(?<![\w./\-])[\w./\-]{0,255}sh): (?P<cmd>\.{0,2}/[^\s:]{1,512}): (?P<why>No such file or directory|Permission denied)[ \t]*$")
def _no_such_file(m, rec, state):
    if not _launcher(m.group("cmd")):
        return None
    if not first_time(state, ("not_found", m.group("cmd")), rec.loc.line):
        return []
    return _error(rec, m.group("cmd"), "shell")


@rule("python-cannot-open-script", ("can't open file",),
      r"(?:^|\s)(?P<py>\S*python[\d.]*(?:\.exe)?): can't open file (?P<q>['\"])(?P<cmd>.+?)(?P=q): \[Errno \d+\] ")
def _python_no_script(m, rec, state):
    if not first_time(state, ("not_found", m.group("cmd")), rec.loc.line):
        return []
    return _error(rec, m.group("cmd"), "python")


@rule("slurmstepd-execve", ("execve():",),
      r"slurmstepd(?:-\S+)?: error: execve\(\): (?P<cmd>.+?): (?P<why>No such file or directory|Permission denied)\s*$")
def _execve(m, rec, state):
    if not first_time(state, ("execve", m.group("cmd")), rec.loc.line):
        return []
    return _error(rec, m.group("cmd"), "slurmstepd")


@rule("mpirun-no-executable", ("was unable to launch the specified application", "was unable to find the specified executable",
                               "was unable to start the specified application", 'new process via the "execve" system call but'),
      r"(?<![\w.\-])(?P<tool>[\w.\-]{1,64}) was unable to (?:launch the specified application as it could not access|find the specified executable file"
      r"|start the specified application as it encountered)|(?P<odls>Open MPI) tried to fork a new process via the \"execve\" system call but")
def _mpirun(m, rec, state):
    if not first_time(state, ("mpirun_exec",), rec.loc.line):
        return []
    return _error(rec, "", m.group("tool") or "mpirun")


PARSER = Parser(
    name="shell",
    framework="system",
    priority=45,
    description="the shell, slurmstepd and mpirun reporting that the job's command does not exist (command not found, execve() failed)",
    rules=[_not_found, _no_such_file, _python_no_script, _execve, _mpirun],
)
