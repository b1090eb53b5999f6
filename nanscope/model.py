"""The normalized event model shared by parsers, the engine and the reports.

Every event carries its Loc so a finding can always show its evidence. Numbers that a log did
not print are None, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Optional

_FIELDS: dict = {}


def _reduce(self: Any) -> tuple:
    """Pickle as (class, field values): several times cheaper than the slots dataclasses'
    default, which matters when workers send a file's events to the parent (nanscope.parallel)."""
    cls = type(self)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return cls, tuple([getattr(self, n) for n in names])


@dataclass(frozen=True, slots=True)
class Loc:
    source: str
    line: int

    __reduce__ = _reduce


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a line came from: which process printed it, as far as its prefixes tell."""

    rank: Optional[int] = None  # global rank
    local_rank: Optional[int] = None
    node: Optional[str] = None
    ts: Optional[float] = None  # seconds; only comparable within one job
    proc: Optional[str] = None  # the process tag of a wrapper prefix, e.g. VllmWorker, EngineCore_0

    __reduce__ = _reduce


@dataclass(frozen=True, slots=True)
class Record:
    """One logical line after ingest: prefixes peeled, ANSI stripped, decoded."""

    loc: Loc
    text: str
    origin: Origin
    raw: str  # the line as printed (decoded, ANSI stripped), prefixes included


@dataclass(frozen=True, slots=True)
class Collective:
    pg: Optional[str] = None
    seq: Optional[int] = None
    op: Optional[str] = None
    enqueued: Optional[int] = None
    completed: Optional[int] = None
    timeout_ms: Optional[int] = None


@dataclass(slots=True)
class Event:
    """Base of all events. `origin` is who printed the line; `rank` is who it is about."""

    kind: ClassVar[str] = "event"
    loc: Loc
    text: str
    framework: str
    origin: Origin = field(default_factory=Origin)
    rank: Optional[int] = None
    step: Optional[int] = None
    stream: Any = None  # set by the pipeline: the per-(node, rank) stream key
    # set by streams: `step` is a count of the stream's step lines, not a number the log printed
    step_counted: bool = False

    def get(self, name: str) -> Any:
        return getattr(self, name, None)

    __reduce__ = _reduce


@dataclass(slots=True)
class StepEvent(Event):
    kind: ClassVar[str] = "step"
    loss: Optional[float] = None
    grad_norm: Optional[float] = None
    lr: Optional[float] = None
    loss_scale: Optional[float] = None
    skipped: Optional[bool] = None  # this step's update was skipped
    nan_iters: Optional[int] = None  # Megatron: NaN iterations in this logging interval
    skipped_iters: Optional[int] = None  # Megatron: skipped iterations in this logging interval
    skipped_total: Optional[int] = None  # DeepSpeed: cumulative skipped steps (step=N, skipped=K)
    tokens_per_s: Optional[float] = None
    epoch: Optional[float] = None
    raw_fields: Optional[dict] = None


@dataclass(slots=True)
class ScaleEvent(Event):
    """A loss-scale change: an overflow that skipped a step, or the scale growing back."""

    kind: ClassVar[str] = "scale"
    action: str = "decrease"  # decrease | increase | overflow | minimum
    old_scale: Optional[float] = None
    new_scale: Optional[float] = None
    rank_is_printer_only: bool = False


@dataclass(slots=True)
class ErrorEvent(Event):
    kind: ClassVar[str] = "error"
    error: str = "exception"  # normalized error kind, e.g. exception, cuda_oom, nccl_timeout
    message: str = ""
    exc_type: Optional[str] = None
    fingerprint: Optional[str] = None
    exitcode: Optional[int] = None
    signal: Optional[str] = None
    collective: Optional[Collective] = None
    fields: Optional[dict] = None


@dataclass(slots=True)
class WarningEvent(Event):
    kind: ClassVar[str] = "warning"
    warning: str = ""
    message: str = ""
    fields: Optional[dict] = None


@dataclass(slots=True)
class MetricsEvent(Event):
    """Periodic serving/throughput stats (vLLM's engine stats lines)."""

    kind: ClassVar[str] = "metrics"
    running: Optional[int] = None
    waiting: Optional[int] = None
    swapped: Optional[int] = None
    preemptions: Optional[int] = None  # cumulative, as printed
    kv_cache_usage: Optional[float] = None  # percent
    prompt_tps: Optional[float] = None
    generation_tps: Optional[float] = None
    fields: Optional[dict] = None


@dataclass(slots=True)
class LifecycleEvent(Event):
    kind: ClassVar[str] = "lifecycle"
    action: str = "start"  # start | restart | checkpoint_save | checkpoint_load | end | teardown | traceback
    fields: Optional[dict] = None


EVENT_KINDS = {c.kind: c for c in (StepEvent, ScaleEvent, ErrorEvent, WarningEvent, MetricsEvent, LifecycleEvent)}


@dataclass(slots=True)
class Evidence:
    source: str
    line: int
    text: str
    rank: Optional[int] = None


@dataclass
class Finding:
    id: str
    revision: int
    severity: str
    title: str
    summary: str
    category: str
    retryable: bool
    benign: bool
    ranks: list
    first_step: Optional[int]
    first_ts: Optional[float]
    evidence: list
    root_cause: str
    fix: str
    verify: str
    benign_when: str
    references: list
    related: list
    initiating_rank: Optional[int] = None
    confidence: str = "low"
    decided_by: str = ""
    collateral_ranks: list = field(default_factory=list)
    collateral: list = field(default_factory=list)  # grouped findings caused by this one
    also_matched: list = field(default_factory=list)
    occurrences: int = 1
    first_loc: Optional[tuple] = None  # (source, line) for ordering
    baseline_status: Optional[str] = None  # with --baseline: "new" or "known"
    matches: list = field(default_factory=list, repr=False, compare=False)  # for attribution only
    sig: Any = field(default=None, repr=False, compare=False)


@dataclass(slots=True)
class RankSummary:
    rank: Optional[int]
    node: Optional[str]
    label: str
    steps: int = 0
    first_step: Optional[int] = None
    last_step: Optional[int] = None
    nonfinite_steps: int = 0
    skipped_steps: int = 0
    loss_scale_min: Optional[float] = None
    loss_scale_max: Optional[float] = None
    last_loss: Optional[float] = None


@dataclass(slots=True)
class InputInfo:
    path: str
    size: Optional[int]
    lines: int = 0
    candidate_lines: int = 0
    event_lines: int = 0
    formats: dict = field(default_factory=dict)  # parser name -> lines recognised
    complete: bool = True
    replaced_bytes: int = 0
    long_lines: int = 0
    nul_bytes: int = 0
    error: Optional[str] = None
    topology: Optional[str] = None  # how global ranks were derived from nodes and local ranks, if they were


@dataclass(slots=True)
class Diagnostic:
    """Something about the input or the run of nanscope itself, not about the job."""

    code: str
    message: str
    source: Optional[str] = None
    line: Optional[int] = None


@dataclass(slots=True)
class Report:
    tool_version: str
    inputs: list
    ranks: list
    findings: list
    diagnostics: list
    verdict: str
    signatures_loaded: int
    elapsed_s: float = 0.0
    baseline: Optional[dict] = None  # with --baseline: what is new or worse
    signatures: list = field(default_factory=list, repr=False)  # the signatures this run used (SARIF rules, JUnit cases)
    series: list = field(default_factory=list, repr=False)  # nanscope.series.RankSeries: the curves of the pictures
