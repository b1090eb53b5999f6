"""Intel Gaudi (Habana): the Synapse graph compiler could not compile a graph the PyTorch bridge handed it.

In lazy mode (and for HPU graphs, and torch.compile's hpu_backend) the habana_frameworks PyTorch bridge accumulates ops
into a graph and asks Synapse to compile it (synGraphCompile) before it runs. A graph Synapse cannot compile stops the
step; the bridge says so in its releases' words (the status is Synapse's synStatus and its description):
    RuntimeError: Graph compile failed. synStatus=synStatus 26 [Generic failure].
    (1.13-1.14 images spell it `[Generice failure]`)
    [PT_BRIDGE][error] .../synapse_helpers/graph.cpp: 599Graph compile failed. synStatus=synStatus 26 [Generic failure]. compile
    RuntimeError: [Rank:6] FATAL ERROR :: MODULE:PT_BRIDGE Exception in Launch thread...
    Check $HABANA_LOGS/ for detailsGraph compile failed. synStatus=synStatus 26 [Generic failure].   (the launch thread's
                                                                                                       re-raise, glued)
    RuntimeError: synNodeCreateWithId failed for node: spatial_convolution with synStatus 26 [Generic failure].
                                                                     (a node the graph could not even take)
Synapse's own logger says why just before, in `[time][COMPONENT][error][tid:N] message` records: the graph compiler
(`[GC ...][error] Failed to load tpc kernel for node: TPC634, GUID: constant_bf16. Got error: GLUE_FAILED`, a TPC
kernel library that does not match the bridge or has no kernel for the op / dtype), the pass manager (`Graph
optimization failed pass: loadTpcKernels`), SYN_API (`synGraphCompile: SYN_API_CALL failed status: 26[synFail]`). The
first compile-failed line of a graph is the event, the compiler's first error before it its reason (every rank of a
data-parallel job compiles the same graph: the other ranks' lines are the same failure).
"""

from __future__ import annotations

from nanscope.model import ErrorEvent
from nanscope.parsers._repeats import first_time
from nanscope.parsers.base import Parser, rule

FW = "habana"

_REASON_SPAN = 40  # lines: the compiler's error record that the bridge's failure follows


@rule("synapse-gc-error", ("[error][tid:",), r"\[GC\s*\]\[error\]\[tid:\w+\] (?P<why>\S.*)$")
def _gc_error(m, rec, state):
    if "gc_reason" not in state or rec.loc.line - state["gc_reason"][0] > _REASON_SPAN:
        state["gc_reason"] = (rec.loc.line, m.group("why").rstrip()[:200])  # the first error of the compile says why
    return []


@rule("graph-compile-failed", ("Graph compile failed. synStatus=", "synNodeCreateWithId failed for node: "),
      r"(?P<msg>Graph compile failed\. synStatus=synStatus (?P<code>\d+) \[(?P<why>[^\]\n]{1,80})\]"
      r"|synNodeCreateWithId failed for node: (?P<node>\S+) with synStatus (?P<code2>\d+) \[(?P<why2>[^\]\n]{1,80})\])")
def _graph_compile(m, rec, state):
    if not first_time(state, ("hpu_graph_compile",), rec.loc.line):
        return []  # the bridge's record, the launch thread's re-raise, the other ranks: one failure
    reason = state.pop("gc_reason", None)
    code, why = m.group("code") or m.group("code2"), m.group("why") or m.group("why2")
    what = (f"Synapse could not create the node {m.group('node')}" if m.group("node") else
            "Synapse's graph compiler could not compile the graph the PyTorch bridge built")
    detail = f"{what} (synStatus {code}: {why.strip()})"
    if reason is not None and rec.loc.line - reason[0] <= _REASON_SPAN:
        detail += f"; the compiler's error: {reason[1]}"
    exc = "RuntimeError" if "RuntimeError: " in rec.text[:m.start()] else None
    return ErrorEvent(loc=rec.loc, text=rec.text, framework=FW, error="hpu_graph_compile_failed",
                      message=rec.text[m.start():].strip()[:400], exc_type=exc,
                      fields={"detail": detail, "status": int(code), "node": m.group("node")})


PARSER = Parser(
    name="habana",
    framework=FW,
    priority=40,  # before the generic exception parser (python, 80): the RuntimeError line is this one's
    description="Intel Gaudi: Synapse graphs the PyTorch bridge could not compile (Graph compile failed. synStatus=...),"
                " with the graph compiler's error before it",
    rules=[_gc_error, _graph_compile],
)
