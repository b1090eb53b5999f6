"""A multi-node launcher could not start the job's processes on another host.

The launchers reach the other hosts over ssh (mpirun's rsh/ssh PLM, pdsh under the DeepSpeed launcher,
horovodrun) and then start a daemon or the ranks there. Their reports, from the sources:
  Open MPI <= 4 (orte/mca/plm/base/help-plm-base.txt, orte/mca/errmgr/.../help-errmgr-base.txt) and
  Open MPI 5 / PRRTE (the same help text with PRTE):
      ORTE was unable to reliably start one or more daemons.
      ORTE does not know how to route a message to the specified daemon
      An ORTE daemon has unexpectedly failed after launch and before communicating back to mpirun.
  the OpenSSH client that the launcher runs (ssh.c / sshconnect.c):
      ssh: connect to host 192.168.11.1 port 50000: Connection refused     (No route to host, Connection timed out)
      ssh: Could not resolve hostname worker-5.job: Name or service not known
      node: user@node: Permission denied (publickey,password).           (pdsh prefixes the host)
  pdsh (src/pdsh/dsh.c, "%p: %S: %s exited with exit code %d"):
      pdsh@launcher: node: ssh exited with exit code 255
  DeepSpeed (deepspeed/launcher/runner.py, its ssh check of every hostfile host):
      RuntimeError: Using hostfile at /path/hostfile but host=node was not reachable via ssh. ...
  horovodrun (horovod/runner/launch.py):
      ssh not successful for host node:      /      RuntimeError: could not connect to some hosts via ssh
A git clone's `git@github.com: Permission denied (publickey).` is not a launcher's and is left alone.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule


def _error(rec, how: str, host, reason: str) -> ErrorEvent:
    return ErrorEvent(loc=rec.loc, text=rec.text, framework="system", error="remote_launch_failed",
                      message=rec.text.strip(), fields={"source": how, "host": host, "reason": reason})


def _once(state: dict, rec, key: tuple) -> bool:
    return first_time(state, ("remote_launch",) + key, rec.loc.line)


@rule(
    "rte-daemons-not-started",
    ("was unable to reliably start one or more daemons", "does not know how to route a message to the specified daemon",
     "daemon has unexpectedly failed after launch"),
    r"\b(?P<rte>ORTE|PRTE|PRRTE) (?:was unable to reliably start one or more daemons|does not know how to route a message to the "
    r"specified daemon)|\bAn (?P<rte2>ORTE|PRTE|PRRTE) daemon has unexpectedly failed after launch",
)
def _rte(m, rec, state):
    if not _once(state, rec, ("rte",)):
        return []
    return _error(rec, (m.group("rte") or m.group("rte2")).lower(), None, rec.text.strip())


@rule(
    "ssh-client",
    ("ssh: connect to host", "ssh: Could not resolve hostname"),
    r"\bssh: (?:connect to host (?P<host>\S+) port \d+: (?P<why>Connection refused|No route to host|Connection timed out"
    r"|Network is unreachable|Connection reset by peer)|Could not resolve hostname (?P<rhost>[^:\s]{1,255}): (?P<rwhy>[^\n]{1,200}))",
)
def _ssh(m, rec, state):
    host = m.group("host") or m.group("rhost")
    if not _once(state, rec, ("ssh", host)):
        return []
    return _error(rec, "ssh", host, (m.group("why") or m.group("rwhy")).strip())


@rule("ssh-auth", ("Permission denied (publickey",), r"(?:^|\s)(?P<who>[\w.\-]+@[\w.\-]+): Permission denied \((?P<methods>publickey[^)]*)\)")
def _ssh_auth(m, rec, state):
    who = m.group("who")
    if who.startswith("git@") or "github" in who or "gitlab" in who:
        return None  # a repository clone, not a launcher
    host = who.split("@", 1)[1]
    if not _once(state, rec, ("auth", host)):
        return []
    return _error(rec, "ssh", host, f"Permission denied ({m.group('methods')})")


@rule("pdsh-ssh-exit", ("ssh exited with exit code",), r"\bpdsh@[^:\s]+: (?P<host>[^:\s]+): ssh exited with exit code (?P<code>\d+)")
def _pdsh(m, rec, state):
    if not _once(state, rec, ("pdsh", m.group("host"))):
        return []
    return _error(rec, "pdsh", m.group("host"), f"ssh exited with exit code {m.group('code')}")


@rule(
    "launcher-ssh-check",
    ("was not reachable via ssh", "ssh not successful for host", "could not connect to some hosts via ssh"),
    r"\bhost=(?P<host>\S+) was not reachable via ssh|\bssh not successful for host (?P<hhost>[^:\s]+)|could not connect to some hosts via ssh",
)
def _ssh_check(m, rec, state):
    host = m.group("host") or m.group("hhost")
    if not _once(state, rec, ("check", host)):
        return []
    return _error(rec, "deepspeed" if m.group("host") else "horovodrun", host, "not reachable via ssh")


PARSER = Parser(
    name="remote_launch",
    framework="system",
    priority=15,  # before the python parser: DeepSpeed's and horovodrun's reports are exception lines
    description="multi-node launchers (mpirun's ORTE / PRRTE, pdsh, DeepSpeed, horovodrun) that cannot start processes on another host over ssh",
    rules=[_rte, _ssh, _ssh_auth, _pdsh, _ssh_check],
)
