"""Score a diagnosis against a labelled folder of logs (`nanscope eval DIR`).

A labelled folder holds one or more `MANIFEST.toml` files (DIR/MANIFEST.toml and any below it).
Each `[[log]]` (a file) or `[[log_dir]]` (a folder of one job's files) is a case, its `path`
relative to the folder of its manifest:

    [[log]]
    path = "017.log"
    framework = "deepspeed"          # what the table groups by
    healthy = false                  # a healthy trap: any actionable finding is a false alarm
    expect = ["loss-scale-collapse"] # expect[0] is THE failure; the others are also right
    accept = ["nan-persistent"]      # other ids that count as naming it
    initiating_rank = 3              # only where the log text shows it
    first_bad_step = 500             # where the text shows it

Other keys (source, url, diagnosis, fix, confidence, edits, notes, verdict, known_gaps) are
documentation: kept, not scored. An unknown key is an error naming the manifest, so a typo
never silently drops a label.

The scores: *detected* (a right id anywhere in the report: a finding, its grouped collateral or
what it superseded), *first* (the report's first finding is a right id), *rank* (the right
finding names the labelled initiating rank), *step* (its first step is the labelled one) and
*false alarms* (a healthy trap whose verdict is neither clean nor benign).
"""

from __future__ import annotations

from nanscope import tomlfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from nanscope.errors import NanscopeError
from nanscope.model import Finding, Report

SCORED_KEYS = {"path", "framework", "healthy", "expect", "accept", "initiating_rank", "first_bad_step"}
DOC_KEYS = {"source", "url", "diagnosis", "fix", "confidence", "edits", "notes", "verdict", "known_gaps", "component"}
CASE_TABLES = ("log", "log_dir")
QUIET_VERDICTS = ("clean", "benign")


@dataclass(frozen=True)
class Case:
    """One labelled log (or folder of one job's logs)."""

    path: Path
    name: str  # as shown: relative to the evaluated folder
    framework: str
    healthy: bool
    expect: tuple[str, ...]
    accept: tuple[str, ...]
    initiating_rank: Optional[int]
    first_bad_step: Optional[int]
    manifest: Path

    @property
    def failure(self) -> Optional[str]:
        return self.expect[0] if self.expect else None

    @property
    def right_ids(self) -> frozenset[str]:
        return frozenset(self.expect) | frozenset(self.accept)


@dataclass
class Outcome:
    """What the diagnosis said on one case, scored."""

    case: Case
    findings: list[str]  # top-level ids, report order
    named: set[str]  # every id anywhere in the report
    verdict: str
    detected: Optional[bool] = None  # None on healthy traps
    first: Optional[bool] = None
    rank: Optional[int] = None  # the rank the right finding names
    rank_right: Optional[bool] = None  # None where no rank is labelled
    step: Optional[int] = None
    step_right: Optional[bool] = None
    false_alarm: Optional[bool] = None  # None on failures
    error: Optional[str] = None  # the diagnosis itself failed

    @property
    def miss(self) -> bool:
        return bool(self.error) or self.detected is False or self.first is False or self.rank_right is False or bool(self.false_alarm)


@dataclass
class Tally:
    failures: int = 0
    detected: int = 0
    first: int = 0
    ranked: int = 0  # cases with a labelled rank
    rank_right: int = 0
    stepped: int = 0
    step_right: int = 0
    healthy: int = 0
    false_alarms: int = 0

    def add(self, o: Outcome) -> None:
        if o.case.healthy:
            self.healthy += 1
            self.false_alarms += bool(o.false_alarm)
            return
        self.failures += 1
        self.detected += bool(o.detected)
        self.first += bool(o.first)
        if o.rank_right is not None:
            self.ranked += 1
            self.rank_right += o.rank_right
        if o.step_right is not None:
            self.stepped += 1
            self.step_right += o.step_right

    def rates(self) -> dict:
        def pct(a: int, b: int) -> Optional[float]:
            return round(100.0 * a / b, 1) if b else None

        return {
            "failures": self.failures, "detected": self.detected, "detected_pct": pct(self.detected, self.failures),
            "first": self.first, "first_pct": pct(self.first, self.failures),
            "ranked": self.ranked, "rank_right": self.rank_right, "rank_pct": pct(self.rank_right, self.ranked),
            "stepped": self.stepped, "step_right": self.step_right, "step_pct": pct(self.step_right, self.stepped),
            "healthy": self.healthy, "false_alarms": self.false_alarms,
        }


@dataclass
class EvalResult:
    root: str
    outcomes: list[Outcome]
    unknown_ids: dict[str, list[str]] = field(default_factory=dict)  # id -> cases that expect it

    def tally(self, key: Optional[Callable[[Outcome], str]] = None) -> dict[str, Tally]:
        out: dict[str, Tally] = {}
        for o in self.outcomes:
            k = key(o) if key else "all"
            out.setdefault(k, Tally()).add(o)
        return dict(sorted(out.items()))

    @property
    def total(self) -> Tally:
        return self.tally()["all"] if self.outcomes else Tally()

    def by_framework(self) -> dict[str, Tally]:
        return self.tally(lambda o: o.case.framework)

    def by_failure(self) -> dict[str, Tally]:
        return self.tally(lambda o: "(healthy)" if o.case.healthy else (o.case.failure or "?"))

    def misses(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.miss]

    def to_dict(self) -> dict:
        return {
            "root": self.root,
            "total": self.total.rates(),
            "by_framework": {k: t.rates() for k, t in self.by_framework().items()},
            "by_failure": {k: t.rates() for k, t in self.by_failure().items()},
            "unknown_ids": self.unknown_ids,
            "cases": [_outcome_dict(o) for o in self.outcomes],
        }


def _outcome_dict(o: Outcome) -> dict:
    c = o.case
    return {
        "path": c.name, "framework": c.framework, "healthy": c.healthy, "expect": list(c.expect),
        "accept": list(c.accept), "initiating_rank": c.initiating_rank, "first_bad_step": c.first_bad_step,
        "findings": o.findings, "verdict": o.verdict, "detected": o.detected, "first": o.first,
        "rank": o.rank, "rank_right": o.rank_right, "step": o.step, "step_right": o.step_right,
        "false_alarm": o.false_alarm, "error": o.error,
    }


def find_manifests(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise NanscopeError(f"eval: {root} is not a folder or a manifest file")
    found = sorted(root.rglob("MANIFEST.toml"))
    if not found:
        raise NanscopeError(f"eval: no MANIFEST.toml in {root} or below it (see `nanscope eval --help` for the format)")
    return found


def load_cases(root: Path) -> list[Case]:
    """Every case of every manifest under root, checked: a bad manifest is an error with its file."""
    base = root if root.is_dir() else root.parent
    cases: list[Case] = []
    for m in find_manifests(root):
        try:
            data = tomlfile.loads(m.read_text(encoding="utf-8"))
        except (tomlfile.TOMLDecodeError, UnicodeDecodeError) as e:
            raise NanscopeError(f"{m}: not a valid TOML manifest: {e}") from None
        for table in CASE_TABLES:
            entries = data.get(table, [])
            if not isinstance(entries, list):
                raise NanscopeError(f"{m}: '{table}' must be an array of tables ([[{table}]])")
            for i, entry in enumerate(entries, 1):
                cases.append(_case(m, base, table, i, entry))
    return cases


def _case(manifest: Path, base: Path, table: str, index: int, entry: dict) -> Case:
    where = f"{manifest}: [[{table}]] #{index}"
    unknown = set(entry) - SCORED_KEYS - DOC_KEYS
    if unknown:
        raise NanscopeError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    if not isinstance(entry.get("path"), str):
        raise NanscopeError(f"{where}: needs path = \"...\" (relative to the manifest's folder)")
    path = manifest.parent / entry["path"]
    if not path.exists():
        raise NanscopeError(f"{where}: {entry['path']} does not exist next to the manifest")
    healthy = bool(entry.get("healthy", False))
    expect = _ids(entry.get("expect", []), where, "expect")
    if not healthy and not expect:
        raise NanscopeError(f"{where}: a failure needs expect = [\"<signature id>\", ...] (or healthy = true)")
    for key in ("initiating_rank", "first_bad_step"):
        if key in entry and (not isinstance(entry[key], int) or isinstance(entry[key], bool)):
            raise NanscopeError(f"{where}: {key} must be an integer")
    try:
        name = str(path.relative_to(base))
    except ValueError:
        name = str(path)
    return Case(path=path, name=name, framework=str(entry.get("framework", "?")), healthy=healthy, expect=expect,
                accept=_ids(entry.get("accept", []), where, "accept"), initiating_rank=entry.get("initiating_rank"),
                first_bad_step=entry.get("first_bad_step"), manifest=manifest)


def _ids(value, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NanscopeError(f"{where}: {key} must be a list of signature ids")
    return tuple(value)


def named_ids(report: Report) -> set[str]:
    """Every id a reader of the report sees: findings, their grouped collateral, what they superseded."""
    out: set[str] = set()

    def walk(fs: Iterable[Finding]) -> None:
        for f in fs:
            out.add(f.id)
            out.update(f.also_matched)
            walk(f.collateral)

    walk(report.findings)
    return out


def score(case: Case, report: Report) -> Outcome:
    named = named_ids(report)
    o = Outcome(case=case, findings=[f.id for f in report.findings], named=named, verdict=report.verdict)
    if case.healthy:
        o.false_alarm = report.verdict not in QUIET_VERDICTS
        return o
    right = case.right_ids
    o.detected = bool(named & right)
    o.first = bool(report.findings) and report.findings[0].id in right
    hit = _right_finding(report.findings, right)
    if hit is not None:
        o.rank, o.step = hit.initiating_rank, hit.first_step
    if case.initiating_rank is not None:
        o.rank_right = hit is not None and hit.initiating_rank == case.initiating_rank
    if case.first_bad_step is not None:
        o.step_right = hit is not None and hit.first_step == case.first_bad_step
    return o


def _right_finding(findings: list[Finding], right: frozenset[str]) -> Optional[Finding]:
    """The first finding (in report order, collateral after its root) whose id is right; a root
    that superseded a right id stands for it."""
    for f in findings:
        if f.id in right or right & set(f.also_matched):
            return f
        sub = _right_finding(f.collateral, right)
        if sub is not None:
            return sub
    return None


def evaluate(root: Path, diagnose: Callable[[Path], Report], known_ids: Iterable[str]) -> EvalResult:
    """Diagnose every case with `diagnose` and score it. A case whose diagnosis raises is scored
    as a miss with its error, never the end of the evaluation."""
    cases = load_cases(root)
    known = set(known_ids)
    unknown: dict[str, list[str]] = {}
    outcomes = []
    for c in cases:
        for i in c.expect:
            if i not in known:
                unknown.setdefault(i, []).append(c.name)
        try:
            outcomes.append(score(c, diagnose(c.path)))
        except NanscopeError as e:
            outcomes.append(Outcome(case=c, findings=[], named=set(), verdict="error", error=str(e),
                                    detected=None if c.healthy else False, first=None if c.healthy else False,
                                    false_alarm=True if c.healthy else None,
                                    rank_right=None if c.initiating_rank is None else False))
    return EvalResult(root=str(root), outcomes=outcomes, unknown_ids=unknown)
