"""JAX's multi-process runtime: the XLA / TSL coordination service, and the CUDA backend that does not start.

jax.distributed.initialize() starts the coordination service in process 0 and connects every process (a
"task", /job:jax_worker/replica:0/task:N, N the process_id) to it; barriers, the key-value store and
heartbeats go through it. Its messages, by release (openxla/xla xla/tsl/distributed_runtime/coordination/
coordination_service.cc and coordination_service_agent.cc; tensorflow/core/distributed_runtime/coordination/
before the move to TSL):

- CheckBarrierTimeout, a barrier that not every task reached before its deadline:
    2022-2023: `DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. Timed out task names:`
               (the missing tasks on the lines after it)
    2024+:     `Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually happens because a task
               triggered the barrier too early or too slowly. ...` then `# of tasks that reached the barrier: 8/16.`
  The barriers jax.distributed.initialize itself waits in are the connect / register ones (PjRT_Client_Connect,
  [Init]Wait_for_all_tasks_to_register): then the processes never all started, a rendezvous that did not complete.
  Any other id (a framework's barrier: levanter's multihost_broadcast_sync0, orbax's async_write_complete) is a
  barrier of the running job that some process never reached. The shutdown barrier at exit is another failure's
  consequence and is not read here.
- RegisterTask's barrier failing: `Stopping coordination service as cluster registration failed. This may be due to
  1) some tasks crashed earlier before connecting, 2) some tasks were never scheduled, or 3) scheduling delays. ...`
- CheckHeartbeatTimeout: `Task /job:jax_worker/replica:0/task:37 heartbeat timeout. This indicates that the remote
  task has failed, got preempted, or crashed unexpectedly. ...` (2022's line prefixes `/job:.../task:37 has been set
  to ERROR in coordination service: UNAVAILABLE: `): task 37 is the process that went away.
- xla/pjrt/distributed/client.h: `Terminating process because the JAX distributed service detected fatal errors. This
  most likely indicates that another task died; ...`: this process is torn down after another one failed.
- CoordinationServiceAgentImpl::GetKeyValue: `GetKeyValue() timed out with key: <key> and duration: <d>`: a key that
  another process never wrote. `cuda:local_topology/cuda/N` is jax.distributed.initialize's topology exchange (the
  processes never all got there); a collective's clique key (`devices=[...]; stream=0; ...`) is the NCCL clique id
  a collective waits for, from a process that never entered it.

The CUDA backend (jax-ml/jax jax/_src/xla_bridge.py backends() / _get_backend_uncached; jax_plugins/cuda
_check_cuda_versions):
- `Unable to initialize backend 'cuda': <err>` (INFO, 0.4.x) then `No GPU/TPU found, falling back to CPU.` (WARNING):
  the job runs on the CPU. The INFO line alone is no failure: xla_bridge tries every backend it knows, and the
  lines for 'rocm', 'tpu', 'tpu_driver', 'plugin' on a machine that uses CUDA are the normal order of trying.
- `CUDA backend failed to initialize: <err> (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)` (WARNING, the
  CUDA plugin installed but not usable), `An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is
  not installed. Falling back to cpu.`, and `RuntimeError: Backend 'cuda' failed to initialize: <err>` (the platform
  was asked for): the job gets no GPU.
- the plugin's version check as <err>: `Unable to use CUDA because of the following issues with CUDA components:`
  then one line per component, `Outdated cuDNN installation found.` (with the versions after it) or `Unable to load
  cuPTI. Is it installed?`: an old cuDNN is cudnn-init-failed, any other component no usable GPU.
"""

from __future__ import annotations

import re

from nanscope.model import Collective, ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import LazyPattern, Parser, rule
from nanscope.parsers.setup_checks import error_event, exc_type_before

FW = "jax"
_INIT_BARRIERS = LazyPattern(r"^(?:PjRT_Client_Connect|\[Init\]Wait_for_all_tasks_to_register)(?:::\d+)?$")
_COMPONENTS_WINDOW = 12  # lines: the components the version check lists follow its header


def _event(m, rec, kind: str, **fields) -> ErrorEvent:
    msg = rec.text[m.start("msg"):].strip()
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error=kind, message=msg[:400],
                      exc_type=exc_type_before(rec.text, m.start("msg")),
                      collective=fields.pop("collective", None), fields=fields)


@rule("xla-barrier-timeout", ("Barrier timed out. ",),
      r"(?<![\"'])(?P<msg>Barrier timed out\. (?:Barrier_id|Id): (?P<id>.+?)\.(?= Timed out task names| This usually|\s*$))")
def _barrier(m, rec, state):
    bid = m.group("id")
    if bid.lower().startswith("shutdown"):
        return None  # the exit barrier: a consequence of another failure
    reached = re.search(r"# of tasks that reached the barrier: (\d+)/(\d+)", rec.text)
    fields = {"backend": "jax-coordination-service", "barrier": bid}
    if reached:
        fields.update(joined=int(reached.group(1)), world_size=int(reached.group(2)))
    if _INIT_BARRIERS.match(bid):
        if not first_time(state, ("xla_coord", "register"), rec.loc.line):
            return []
        return _event(m, rec, "collective_timeout", phase="process group creation", **fields)
    if not first_time(state, ("xla_coord", "barrier", bid), rec.loc.line):
        return []
    return _event(m, rec, "collective_timeout", collective=Collective(op="BARRIER"), **fields)


@rule("xla-cluster-register-failed", ("as cluster registration failed",),
      r"(?P<msg>Stopping coordination service as cluster registration failed)")
def _register_failed(m, rec, state):
    if not first_time(state, ("xla_coord", "register"), rec.loc.line):
        return []
    return _event(m, rec, "collective_timeout", phase="process group creation", backend="jax-coordination-service",
                  barrier="[Init]Wait_for_all_tasks_to_register")


@rule("xla-heartbeat-timeout", (" heartbeat timeout",),
      r"(?P<msg>Task (?P<task>/job:[\w\-]+/replica:\d+/task:(?P<n>\d+)) heartbeat timeout\b.*)")
def _heartbeat(m, rec, state):
    n = int(m.group("n"))
    if not first_time(state, ("xla_coord", "heartbeat", n), rec.loc.line):
        return []
    return _event(m, rec, "peer_connection_lost", backend="jax-coordination-service", reason="heartbeat_timeout",
                  peer=m.group("task"), dead_peer_rank=n,
                  dead_peer_why=f"the JAX coordination service stopped hearing from task {n} (process {n}): "
                                f"that process failed, was preempted or crashed")


@rule("xla-fatal-peer-error", ("the JAX distributed service detected fatal errors",),
      r"(?P<msg>Terminating process because the JAX distributed service detected fatal errors.*)")
def _fatal_peer(m, rec, state):
    if not first_time(state, ("xla_coord", "fatal"), rec.loc.line):
        return []
    return _event(m, rec, "peer_connection_lost", backend="jax-coordination-service", reason="service_fatal_error")


@rule("xla-kv-timeout", ("GetKeyValue() timed out with key: ",),
      r"(?<![\"'])(?P<msg>GetKeyValue\(\) timed out with key: (?P<key>.+?) and duration: (?P<dur>\S+?))(?=\s|\[|$)")
def _kv_timeout(m, rec, state):
    key = m.group("key")
    if not first_time(state, ("xla_coord", "kv"), rec.loc.line):
        return []
    fields = {"backend": "jax-coordination-service", "store_wait": True, "key": key[:200], "timeout": m.group("dur")}
    if "local_topology" in key:
        return _event(m, rec, "collective_timeout", phase="process group creation", **fields)
    return _event(m, rec, "collective_timeout", **fields)


@rule("xla-cuda-backend-failed",
      ("Unable to initialize backend '", "backend failed to initialize: ", "failed to initialize: ",
       "No GPU/TPU found, falling back to CPU", "but a CUDA-enabled jaxlib is not installed"),
      r"(?<![\"'{])(?P<msg>(?:Unable to initialize backend '(?P<info>cuda|gpu)'|(?P<warn>CUDA) backend failed to initialize"
      r"|Backend '(?P<asked>cuda|gpu|rocm)' failed to initialize): ?(?P<why>.*)"
      r"|(?P<fallback>No GPU/TPU found, falling back to CPU)"
      r"|(?P<nojaxlib>An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed))")
def _cuda_backend(m, rec, state):
    if m.group("fallback"):
        seen = state.pop("xla_cuda_failed", None)
        if seen is None:
            return None  # no CUDA backend was tried: a CPU machine's note (and 'rocm' / 'tpu' failing is the normal order)
        return error_event(m, rec, "cuda_no_device", FW, f"JAX's CUDA backend did not start ({seen[:200]}), so the job runs on the CPU",
                           cuda_error="Unable to initialize backend 'cuda'")
    if m.group("nojaxlib"):
        return error_event(m, rec, "cuda_no_device", FW, "the installed jaxlib has no CUDA support (a CPU-only jax), so the job runs on the CPU",
                           cuda_error=m.group("msg")[:120])
    why = re.sub(r"\s*\(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info\.\)\s*$", "", m.group("why")).strip()
    if not why:
        return []  # a bare 'Unable to initialize backend 'cuda': ' (a TPU VM): says nothing
    if why.startswith("Unable to use CUDA because of the following issues with CUDA components"):
        state["xla_cuda_components"] = rec.loc.line  # the components follow, one a line
        return []
    if m.group("info"):
        state["xla_cuda_failed"] = why  # INFO only: it counts when JAX says it fell back to the CPU
        return []
    if re.search(r"cu[Dd][Nn][Nn]", why):
        return error_event(m, rec, "cudnn_init_failed", FW, f"JAX's CUDA backend refused the installed cuDNN ({why[:200]})")
    return error_event(m, rec, "cuda_no_device", FW, f"JAX's CUDA backend did not start: {why[:200]}",
                       cuda_error=f"Backend '{m.group('asked') or 'cuda'}' failed to initialize")


@rule("xla-cuda-component", ("installation found.", ". Is it installed?"),
      r"(?P<msg>Outdated (?P<comp>[\w.\- ]+?) installation found\.|Unable to load (?P<comp2>[\w.\- ]+?)\. Is it installed\?)")
def _cuda_component(m, rec, state):
    at = state.get("xla_cuda_components")
    if at is None or rec.loc.line - at > _COMPONENTS_WINDOW:
        return None
    if not first_time(state, ("xla_cuda", "components"), rec.loc.line):
        return []
    comp = m.group("comp") or m.group("comp2")
    old = m.group("comp") is not None
    if comp.lower() == "cudnn":
        detail = ("the installed cuDNN is older than the one JAX's CUDA plugin was built against" if old
                  else "JAX's CUDA plugin cannot load cuDNN (not installed, or not on the library path)")
        return error_event(m, rec, "cudnn_init_failed", FW, detail)
    detail = (f"JAX's CUDA plugin found {comp} older than the release it was built against" if old
              else f"JAX's CUDA plugin cannot load {comp}")
    return error_event(m, rec, "cuda_no_device", FW, detail + ", so the CUDA backend did not start",
                       cuda_error="Unable to use CUDA because of the following issues with CUDA components")


PARSER = Parser(
    name="xla_coordination",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): XlaRuntimeError / RuntimeError lines are these
    description="JAX's coordination service (barrier and key-value timeouts, heartbeat timeouts, registration) and its CUDA backend",
    rules=[_barrier, _register_failed, _heartbeat, _fatal_peer, _kv_timeout, _cuda_backend, _cuda_component],
)
