"""Ray Serve: the controller's report of a replica that failed to start or died.

The Serve controller logs `ERROR 2025-06-11 13:15:51,444 controller 45327 -- MESSAGE` (older releases:
`... deployment_state.py:625 - MESSAGE`), in the driver's console behind Ray's `(ServeController pid=N) `
tag, which ingest/prefixes.py peels; every rule searches.

Templates (ray-project/ray python/ray/serve/_private/deployment_state.py, across releases; the replica is
named `replica 'D#abcd'` / `replica D#abcd` up to ~2.9, then by ReplicaID's repr `Replica(id='abcd',
deployment='D', app='a')`):
  ActorReplicaWrapper.check_ready, the replica's constructor raised (a RayTaskError):
      f"Exception in replica '{self._replica_tag}', the replica will be stopped."
      f"Exception in {self._replica_id}, the replica will be stopped."
  ... its runtime environment could not be set up (RuntimeEnvSetupError):
      f"Exception when allocating replica '{self._replica_tag}': {str(e)}"  /  f"Exception when allocating {self._replica_id}: ..."
  ActorReplicaWrapper.check_health:
      f"Actor for replica {self._replica_tag} crashed, marking it unhealthy immediately."   (newer: f"Actor for {self._replica_id} ...")
      f"Replica {self._replica_tag} failed the health check {n} times in a row, marking it unhealthy."
  DeploymentState.check_and_update_replicas:
      f"Replica {tag} of backend {name} failed health check, stopping it."                 (1.x)
      f"Replica {tag} of deployment {name}[ in application '{app}'] failed health check, stopping it."
      f"Replica {self._replica_id} failed health check, stopping it."                      (ReplicaID repr)

A replica's crash, its failed health checks and its stop are one failure of that replica; the controller
then starts a new one (`Adding 1 replica to deployment 'D'.`), which is recovery, not a failure.
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "ray-serve"
_REPLICA = r"(?:replica '(?P<{0}q>[^']+)'|replica (?P<{0}t>[^\s,']+)|(?P<{0}r>Replica\(id='[^']*'[^)]*\)))"


def _replica(m, tag: str) -> str:
    return m.group(f"{tag}q") or m.group(f"{tag}t") or m.group(f"{tag}r")


def _event(rec, state, replica: str, phase: str, what: str) -> list[ErrorEvent]:
    if not first_time(state, ("serve_replica", replica), rec.loc.line):
        return []  # the crash, the failed health check and the stop of one replica
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="ray_serve_replica_failed",
                       message=rec.text.strip(),
                       fields={"replica": replica, "phase": phase, "what": what,
                               "detail": f"{replica} {what}"})]


@rule(
    "replica-exception",
    ("the replica will be stopped", "Exception when allocating"),
    r"Exception (?:in " + _REPLICA.format("a") + r", the replica will be stopped\."
    r"|when allocating " + _REPLICA.format("b") + r": (?P<why>.*))",
)
def _replica_exception(m, rec, state):
    if m.group("why") is not None:
        return _event(rec, state, _replica(m, "b"), "startup", "could not be allocated (its runtime environment failed)")
    return _event(rec, state, _replica(m, "a"), "startup", "raised while it started and was stopped")


@rule(
    "replica-unhealthy",
    ("crashed, marking it unhealthy", "failed health check, stopping it", "times in a row, marking it unhealthy"),
    r"Actor for " + _REPLICA.format("c") + r" crashed, marking it unhealthy immediately"
    r"|(?:Replica (?P<dt>\S+) of (?:deployment|backend) \S+?(?: in application '[^']*')?|(?P<dr>Replica\(id='[^']*'[^)]*\)))"
    r" failed health check, stopping it"
    r"|(?:Replica (?P<et>\S+)|(?P<er>Replica\(id='[^']*'[^)]*\))) failed the health check (?P<n>\d+) times in a row",
)
def _replica_unhealthy(m, rec, state):
    if m.group("n") is not None:
        replica = m.group("et") or m.group("er")
        return _event(rec, state, replica, "runtime", f"failed {m.group('n')} health checks in a row")
    if m.group("dt") or m.group("dr"):
        return _event(rec, state, m.group("dt") or m.group("dr"), "runtime", "failed its health check and was stopped")
    return _event(rec, state, _replica(m, "c"), "runtime", "crashed (its actor died)")


PARSER = Parser(
    name="rayserve",
    framework=FW,
    priority=40,
    description="Ray Serve: a replica that raised at start-up, crashed or failed its health checks",
    rules=[_replica_exception, _replica_unhealthy],
)
