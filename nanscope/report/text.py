"""--format text: the terminal report. Verdict first; per finding the cause, the initiating rank and
why, the evidence lines (file:line), the fix and how to verify it; then the per-rank ledger.

Log text never goes through rich markup: everything is built from Text objects, and untrusted
text is sanitized first (no escape sequences reach the terminal).
"""

from __future__ import annotations

import textwrap
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nanscope.model import Finding, Report
from nanscope.redact import redact
from nanscope.report.base import number
from nanscope.report.sanitize import gh_defuse, terminal
from nanscope.rankset import fmt_ranks
from nanscope.report.spark import spark_rows

_SEV_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "bold yellow", "low": "cyan", "info": "dim"}
_VERDICT = {
    "clean": ("CLEAN", "bold green", "no problems found"),
    "benign": ("BENIGN", "bold green", "only benign or informational findings"),
    "actionable": ("ACTIONABLE", "bold red", "something went wrong and needs a fix"),
    "retryable": ("RETRYABLE", "bold yellow", "an infrastructure fault: retry the job"),
    "incomplete": ("INCOMPLETE", "bold yellow", "some input could not be read (see the diagnostics); nothing serious in what was read"),
}


def _safe(text: str, max_len: int = 2000) -> str:
    """Untrusted text for the terminal and for a CI runner reading it: no control or invisible
    characters, no `##[command]` that an Actions runner would execute."""
    return gh_defuse(terminal(text, max_len))


def _wrap(label: str, body: str, width: int) -> Text:
    """A labelled paragraph. The body may hold log text (summaries, decided_by), so it is made safe,
    and a wrapped line never begins with `::` (a GitHub Actions workflow command)."""
    body = " ".join(_safe(body, len(body) + 1).split())
    lines = textwrap.wrap(body, width=max(40, width - 12)) or [""]
    lines = ["\\" + ln if ln.startswith("::") else ln for ln in lines]
    t = Text()
    t.append(f"  {label:<8}", style="bold")
    t.append(lines[0])
    for ln in lines[1:]:
        t.append("\n" + " " * 10 + ln)
    return t


def _finding(console: Console, f: Finding, do_redact: bool, width: int, index: int) -> None:
    head = Text()
    head.append(f"{index}. ", style="bold")
    head.append(f"{f.severity.upper():<8}", style=_SEV_STYLE.get(f.severity, ""))
    head.append(f" {f.id}", style="bold")
    if f.baseline_status:
        head.append(f" [{f.baseline_status}]", style="bold green" if f.baseline_status == "known" else "bold red")
    head.append("  ")
    # a title that does not fit wraps under itself, not under the number
    indent = len(head.plain) if len(head.plain) <= width // 2 else 10
    title = textwrap.wrap(" ".join(_safe(f.title, 300).split()), width=max(20, width - indent)) or [""]
    head.append(title[0])
    for ln in title[1:]:
        head.append("\n" + " " * indent + ("\\" + ln if ln.startswith("::") else ln))
    console.print(head)
    console.print(_wrap("what", redact(f.summary) if do_redact else f.summary, width))
    rank = Text()
    rank.append("  rank    ", style="bold")
    if f.initiating_rank is not None:
        rank.append(f"initiating rank {f.initiating_rank}", style="bold magenta")
        rank.append(f" ({f.confidence} confidence)")
    else:
        rank.append("initiating rank unknown", style="magenta")
    console.print(rank)
    if f.decided_by:
        console.print(_wrap("", redact(f.decided_by) if do_redact else f.decided_by, width))
    if f.collateral_ranks:
        console.print(_wrap("", f"collateral: ranks {fmt_ranks(f.collateral_ranks)}", width))
    for c in f.collateral:
        t = Text("          ")
        if f.initiating_rank is not None:
            at = f" at step {f.first_step}" if f.first_step is not None else ""
            t.append(f"rank {f.initiating_rank}: {f.id}{at} -> ")
        t.append(f"ranks {fmt_ranks(c.ranks)}: " if c.ranks else "")
        t.append(_safe(c.title, 300))
        t.append(f" ({c.id}, collateral)", style="dim")
        console.print(t)
    if f.evidence:
        console.print(Text("  evidence", style="bold"))
        for e in f.evidence:
            t = Text("    ")
            t.append(f"{terminal(e.source, 200)}:{e.line}", style="cyan")
            t.append("  ")
            t.append(_safe(redact(e.text) if do_redact else e.text, 300))
            console.print(t, soft_wrap=True)
    console.print(_wrap("cause", f.root_cause, width))
    console.print(_wrap("fix", f.fix, width))
    console.print(_wrap("verify", f.verify, width))
    if f.also_matched:
        console.print(_wrap("also", "also matched: " + ", ".join(f.also_matched), width))
    console.print()


def _fmt(v: object) -> str:
    v = number(v)  # type: ignore[arg-type]
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


_MAX_LABEL = 24


def _rank_table(console: Console, report: Report, width: int) -> dict[str, str]:
    """The per-rank ledger. A stream without a rank is labelled by its file; a label too long for
    the column becomes `file N`, with the whole path in a legend below (never a truncated path)."""
    table = Table(title="per-rank steps", title_justify="left", show_edge=False, pad_edge=False, box=None)
    for col in ("rank", "steps", "first", "last", "non-finite", "skipped", "loss scale", "last loss"):
        table.add_column(col, justify="left" if col == "rank" else "right", no_wrap=col == "rank")
    rows = []
    for s in report.ranks:
        scale = "-" if s.loss_scale_min is None else f"{_fmt(s.loss_scale_min)}..{_fmt(s.loss_scale_max)}"
        rows.append([terminal(s.label, 2000), str(s.steps), _fmt(s.first_step), _fmt(s.last_step),
                     str(s.nonfinite_steps), str(s.skipped_steps), scale, _fmt(s.last_loss)])
    heads = [str(c.header) for c in table.columns]
    others = sum(max([len(heads[i])] + [len(r[i]) for r in rows]) for i in range(1, len(heads)))
    room = max(_MAX_LABEL, width - others - 2 * (len(heads) - 1))
    legend: dict[str, str] = {}
    limit = _MAX_LABEL if any(len(r[0]) > room for r in rows) else room  # once one goes, all long ones go
    for r in rows:
        if len(r[0]) > limit:
            if r[0] not in legend:
                legend[r[0]] = f"file {len(legend) + 1}"
            r[0] = legend[r[0]]
        table.add_row(Text(r[0]), *r[1:])
    console.print(table)
    for path, key in legend.items():
        console.print(Text(f"{key}: {gh_defuse(path)}"), soft_wrap=True)
    console.print()
    return legend


def render(report: Report, out: IO[str], options) -> None:
    color, width, redact_secrets = options.color, options.width, options.redact
    console = Console(file=out, no_color=not color, force_terminal=color, highlight=False, width=width,
                      emoji=False, markup=False, soft_wrap=False)
    name, style, words = _VERDICT[report.verdict]
    inputs = ", ".join(terminal(i.path, 200) for i in report.inputs[:3])
    if len(report.inputs) > 3:
        inputs += f" and {len(report.inputs) - 3} more"
    ranks = sorted({s.rank for s in report.ranks if s.rank is not None})
    head = Text()
    head.append("nanscope: ")
    if report.baseline is not None:  # the header speaks of what is new; the known findings follow, marked
        b = report.baseline
        name, style, words = _VERDICT[b.get("verdict") or report.verdict]
        if name == "CLEAN":
            words = "nothing new since the baseline"
        new = sum(1 for f in report.findings if f.baseline_status != "known")
        known = len(report.findings) - new
        count = f"{new} new finding(s)"
        tail = f"; {known} known from the baseline follow, marked [known]" if known else ""
    else:
        count, tail = f"{len(report.findings)} finding(s)", ""
    head.append(name, style=style)
    head.append(f" - {words}. {count} in {inputs}")
    if ranks:
        head.append(f" ({len(ranks)} rank(s): {fmt_ranks(ranks)})")
    head.append(tail)
    console.print(head)
    if report.baseline is not None:
        b = report.baseline
        t = Text(f"compared with {terminal(b['source'], 200)}: ")
        t.append(f"new: {', '.join(b['new_findings'])}" if b["new_findings"] else "no new finding")
        if b["resolved_findings"]:
            t.append(f"; gone since: {', '.join(b['resolved_findings'])}")
        for w in b["worse"][:8]:
            t.append(f"; {terminal(w['label'], 60)} {w['field']} {_fmt(w['baseline'])} -> {_fmt(w['now'])}")
        console.print(t)
    console.print()
    for i, f in enumerate(report.findings, 1):
        _finding(console, f, redact_secrets, width, i)
    names: dict[str, str] = {}
    if report.ranks:
        names = _rank_table(console, report, width)
    for i in report.inputs:
        if i.topology:
            console.print(Text(f"ranks in {terminal(i.path, 200)}: {_safe(i.topology, 500)}", style="dim"))
    rows = spark_rows(report.series, getattr(options, "unicode", True), names)
    if rows:
        for line in rows:
            t = Text(line[0], style="bold" if line[1] else "")
            console.print(t, soft_wrap=True)
        console.print()
    for d in report.diagnostics:
        t = Text(f"note [{d.code}] ", style="yellow")
        where = f"{terminal(d.source, 200)}" + (f":{d.line}" if d.line else "") + ": " if d.source else ""
        t.append(where + terminal(d.message, 500))
        console.print(t)


def live_line(f: Finding, do_redact: bool = True) -> str:
    """One line per finding as live mode decides it (`diagnose --follow`)."""
    rank = f"initiating rank {f.initiating_rank}" if f.initiating_rank is not None else "initiating rank unknown"
    step = f" at step {f.first_step}" if f.first_step is not None else ""
    where = f" ({terminal(f.evidence[0].source, 200)}:{f.evidence[0].line})" if f.evidence else ""
    summary = " ".join(_safe(redact(f.summary) if do_redact else f.summary, 600).split())
    return f"nanscope: live: {f.severity.upper()} {f.id}{step}, {rank}{where}: {summary}\n"
