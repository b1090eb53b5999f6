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

The replica's own start-up failure reaches the controller's log two more ways, whatever the release's
controller wording (an excerpt may keep only these lines):
  ray's RayTaskError of the replica actor's start-up call (python/ray/exceptions.py: `ray::{class}.{method}()
  (pid=..., ip=..., actor_id=..., repr=...)`; the actor class is `ServeReplica:{app}:{deployment}`, in 1.x
  `RayServeWrappedReplica`): ray.exceptions.RayTaskError(RuntimeError): ray::ServeReplica:llms:LLMServer:qwen.
  initialize_and_get_metadata() (pid=316, ...)  /  ray::SERVE_CONTROLLER_ACTOR:Fail#ZEqBbB:RayServeWrappedReplica.__init__
  python/ray/serve/_private/replica.py ReplicaActor.initialize re-raising the user's error as text:
      raise RuntimeError(traceback.format_exc()) from None    -> `RuntimeError: Traceback (most recent call last):`
  right under that frame (`.../ray/serve/_private/replica.py", line 730, in initialize`).

Ray's GCS refuses to place the replica actor at all when its runtime environment cannot be set up on the
node it picked (src/ray/gcs/gcs_server/gcs_actor_scheduler.cc, 1.x-2.x, the actor named by its class and
creation method):
      Cannot create an actor RayServeWrappedReplica.__init__ of an id 7ede... because the runtime environment
      setup failed on a node of address 172.31.97.186.
Only a Serve replica's actor (`RayServeWrappedReplica`, `ServeReplica:...`) is read here; another actor's is
no Serve failure.

A replica's crash, its failed health checks and its stop are one failure of that replica; the controller
then starts a new one (`Adding 1 replica to deployment 'D'.`), which is recovery, not a failure.

A replica the cluster cannot place: the controller repeats every SLOW_STARTUP_WARNING_PERIOD_S (30 s) while replicas
stay pending (deployment_state.py DeploymentState._check_startup_replicas, across releases):
  2.9+:  f"Deployment '{name}' in application '{app}' has {n} replicas that have taken more than {30}s to be
         scheduled. This may be due to waiting for the cluster to auto-scale or for a runtime environment to be
         installed. Resources required for each replica: {required}, total resources available: {available}. Use
         `ray status` for more details."   (some releases drop the `has`; RayLLM logs it as JSON)
  2.x:   f'Deployment "{name}" has {n} replicas that have taken more than 30s to be scheduled. This may be caused by
         waiting for the cluster to auto-scale, or waiting for a runtime environment to install. Resources required
         for each replica: {...}, resources available: {...}.'
(`... to initialize. This may be caused by a slow __init__ ...` is a slow constructor, not this.) One such warning
while the cluster lacks what the replica asks for (more GPU than available) is an autoscaler at work; the same
deployment warned again (a minute unscheduled), a cluster with no free resources at all (`available: {}`), or a
first warning while the cluster as a whole has every resource the replica asks for (so no node needs to be added,
yet none takes it: no single node has that much free, a max_replicas_per_node or custom-resource constraint no
node meets; ray-project/kuberay#1090, ray-project/ray#48471) is a replica that is not being placed. The
requirement is a dict (`{"CPU": 3.0}`) or, with placement-group bundles, a list of them (their sum is compared).

The deployment that failed to start replica after replica (deployment_state.py
DeploymentState._check_curr_status, once the constructor retry count is spent; the status message that `serve
status`, the dashboard and the client's wait show):
  2.0-2.4: "The Deployment failed to start {n} times in a row. This may be due to a problem with the deployment
           constructor or the initial health check failing. See logs for details."   (`See controller logs ...
           Retrying after {s} seconds. Error:` in between releases)
  2.5+:    "The deployment failed to start {n} times in a row. This may be due to a problem with its constructor or
           initial health check failing. See controller logs for details. Retrying after {s} seconds. Error:\n{msg}"
python/ray/serve/_private/client.py _wait_for_deployment_healthy puts `Deployment {name} is UNHEALTHY: ` in front
(a RuntimeError); `serve status` prints it under `status: DEPLOY_FAILED` / `message:`.
"""

from __future__ import annotations

import re

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule

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


# ray::ServeReplica:<app>:<deployment>.initialize_and_get_metadata() / RayServeWrappedReplica.__init__ (1.x)
_START_CALL = (r"ray::(?P<actor>(?:[\w#-]+:)*?(?:ServeReplica:(?P<dep>[^\s()]+?)|RayServeWrappedReplica))"
               r"\.(?P<call>initialize_and_get_metadata|initialize|__init__)(?:\(\)|\s\(pid=)")
_INIT_SPAN = 3  # lines from replica.py's `in initialize` frame to its `raise RuntimeError(...)` and the exception


@rule("replica-start-call", ("ServeReplica:", "RayServeWrappedReplica."), _START_CALL)
def _replica_start_call(m, rec, state):
    replica = m.group("dep") or m.group("actor")
    return _event(rec, state, replica, "startup", "raised in its constructor (the replica did not start)")


@rule(
    "replica-actor-not-created",
    ("Cannot create an actor ",),
    r"Cannot create an actor (?P<actor>\S*(?:RayServeWrappedReplica|ServeReplica)\S*) of an id \w+ because "
    r"(?P<why>[^.\r\n]+)",
)
def _replica_not_created(m, rec, state):
    why = m.group("why").strip()
    return _event(rec, state, m.group("actor"), "startup", f"could not be created ({why})")


@rule("replica-init-frame", ('serve/_private/replica.py"',), r'serve/_private/replica\.py", line \d+, in initialize\b')
def _replica_init_frame(m, rec, state):
    state["serve_init_frame"] = rec.loc.line
    return None  # the frame stays the python parser's too


@rule("replica-init-reraise", ("RuntimeError: Traceback (most recent call last)",),
      r"(?:^|\s)RuntimeError: Traceback \(most recent call last\):\s*$")
def _replica_init_reraise(m, rec, state):
    at = state.get("serve_init_frame")
    if at is None or not 0 < rec.loc.line - at <= _INIT_SPAN:
        return None  # some other RuntimeError built from a traceback
    return _event(rec, state, "a Serve replica", "startup", "raised while it initialized (the replica did not start)")


_RESOURCE = LazyPattern(r'\\?"(?P<k>[^"\\]+)\\?":\s*(?P<v>\d+(?:\.\d+)?)')


def _amounts(text: str) -> dict:
    """Resource amounts of a requirement or availability print, summed over placement-group bundles."""
    out: dict = {}
    for r in _RESOURCE.finditer(text):
        out[r.group("k")] = out.get(r.group("k"), 0.0) + float(r.group("v"))
    return out


def _fits(required: str, available: str) -> bool:
    """Every resource the replica asks for is available in the cluster as a whole."""
    need, have = _amounts(required), _amounts(available)
    return bool(need) and all(have.get(k, 0.0) >= v for k, v in need.items())


@rule(
    "deployment-failed-to-start",
    ("times in a row. This may be due to a problem with",),
    r"(?:Deployment (?P<dep>\S+) is UNHEALTHY: )?The [Dd]eployment failed to start (?P<n>\d+) times in a row\. This"
    r" may be due to a problem with (?:its|the deployment) constructor or (?:the )?initial health check failing",
)
def _deployment_failed(m, rec, state):
    dep = m.group("dep")
    name = f"deployment {dep}" if dep else "a deployment"
    return _event(rec, state, name if dep else "a Serve deployment", "startup",
                  f"failed to start {m.group('n')} times in a row (its constructor or initial health check raised;"
                  f" Serve marked it UNHEALTHY)")


@rule(
    "replica-unschedulable",
    ("replicas that have taken more than",),
    r"(?:Deployment|Backend) ['\"](?P<dep>[^'\"]+)['\"](?: in application '(?P<app>[^']*)')?(?: has)? (?P<n>\d+) replicas"
    r" that have taken more than (?P<s>\d+)s to be scheduled\..*?[Rr]esources required for each replica: (?P<req>.+?),"
    r" (?:total )?resources available: (?P<avail>\{[^}]*\})",
)
def _replica_unschedulable(m, rec, state):
    dep = m.group("dep")
    seen = state.setdefault("serve_unscheduled", {})
    seen[dep] = seen.get(dep, 0) + 1
    nothing_free = m.group("avail").strip("{} ") == ""
    fits = _fits(m.group("req"), m.group("avail"))
    if seen[dep] < 2 and not nothing_free and not fits:
        return []  # the first 30 s while resources are short: the autoscaler may still bring a node
    if not first_time(state, ("serve_unschedulable", dep), rec.loc.line):
        return []
    waited = int(m.group("s")) * seen[dep]
    req = m.group("req").replace('\\"', '"')
    if nothing_free:
        what = "with no free resources in the cluster"
    elif fits and seen[dep] < 2:
        what = ("although the cluster has the resources it asks for in all (no single node has them free, or a "
                "placement constraint no node meets)")
    else:
        what = f"for about {waited} s"
    return [ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="ray_serve_replica_unschedulable",
                       message=rec.text.strip(),
                       fields={"deployment": dep, "application": m.group("app"), "replicas": int(m.group("n")),
                               "required": req, "available": m.group("avail"), "warnings": seen[dep],
                               "detail": f"{m.group('n')} replica(s) of deployment '{dep}' not scheduled {what}"
                                         f" (each needs {req}, available {m.group('avail')})"})]


PARSER = Parser(
    name="rayserve",
    framework=FW,
    priority=40,
    description="Ray Serve: a replica that raised at start-up, crashed or failed its health checks, a deployment marked UNHEALTHY after failed starts, or a replica the cluster cannot place",
    rules=[_replica_exception, _replica_unhealthy, _replica_start_call, _replica_not_created, _replica_init_frame, _replica_init_reraise,
           _replica_unschedulable, _deployment_failed],
)
