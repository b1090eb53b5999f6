"""--format markdown: GitHub-flavoured Markdown for PR comments and $GITHUB_STEP_SUMMARY.

GitHub rejects a step summary over 1 MiB (docs: "Adding a job summary", step isolation and
limits), so the report keeps to a byte budget and ends with "…N more findings" when cut short.
Log-derived text (summaries, evidence, paths, rank labels) appears only inside fenced code
blocks whose fence is longer than any backtick run in the text; other text is escaped. No raw
HTML from a log is ever passed through.
"""

from __future__ import annotations

from typing import IO

from nanscope.model import Report
from nanscope.report.base import report_record
from nanscope.report.sanitize import md_fence, md_inline

BUDGET = 900_000  # bytes; GitHub's limit is 1 MiB per step summary
_TAIL_RESERVE = 2_000  # room kept for the ledger header and the "more" line

_VERDICT = {
    "clean": ("✅", "CLEAN", "no problems found"),
    "benign": ("✅", "BENIGN", "only benign or informational findings"),
    "actionable": ("❌", "ACTIONABLE", "something went wrong and needs a fix"),
    "retryable": ("🔁", "RETRYABLE", "an infrastructure fault: retry the job"),
    "incomplete": ("⚠️", "INCOMPLETE", "some input could not be read (see the diagnostics); nothing serious in what was read"),
}


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cell(v: object) -> str:
    return "-" if v is None else md_inline(str(v))


def _finding(i: int, f: dict) -> str:
    parts = [f"### {i}. {f['severity'].upper()} `{f['id']}`: {md_inline(f['title'])}\n\n"]
    parts.append(md_fence(f["summary"]))
    rank = f["initiating_rank"]
    who = f"initiating rank **{rank}** ({md_inline(f['confidence'])} confidence)" if rank is not None \
        else "initiating rank unknown"
    parts.append(f"\n{who}")
    if f["first_step"] is not None:
        parts.append(f", first step **{f['first_step']}**")
    if f["collateral_ranks"]:
        parts.append(f", collateral ranks {', '.join(str(r) for r in f['collateral_ranks'])}")
    parts.append("\n\n")
    if f["decided_by"]:
        parts.append(f"Why this rank: {md_inline(f['decided_by'])}\n\n")
    for c in f["collateral"]:
        parts.append(f"- collateral: `{c['id']}` {md_inline(c['title'])}\n")
    if f["collateral"]:
        parts.append("\n")
    if f["evidence"]:
        lines = "\n".join(f"{e['source']}:{e['line']}  {e['text']}" for e in f["evidence"])
        parts.append("**Evidence**\n\n" + md_fence(lines) + "\n")
    parts.append(f"**Cause:** {md_inline(f['root_cause'])}\n\n")
    parts.append(f"**Fix:** {md_inline(f['fix'])}\n\n")
    parts.append(f"**Verify:** {md_inline(f['verify'])}\n\n")
    return "".join(parts)


def _ledger(ranks: list) -> str:
    if not ranks:
        return ""
    rows = [("rank", "steps", "first", "last", "non-finite", "skipped", "last loss")]
    for s in ranks:
        rows.append((s["label"], str(s["steps"]), str(s["first_step"]), str(s["last_step"]),
                     str(s["nonfinite_steps"]), str(s["skipped_steps"]), str(s["last_loss"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    return "<details><summary>Per-rank steps</summary>\n\n" + md_fence(text) + "\n</details>\n\n"


def render(report: Report, out: IO[str], options: object = None, budget: int = BUDGET) -> None:
    rec = report_record(report, getattr(options, "redact", True))
    icon, name, words = _VERDICT[rec["verdict"]]
    head = [f"## {icon} nanscope: {name}: {words}\n\n"]
    n = len(rec["findings"])
    head.append(f"{n} finding(s) in {len(rec['inputs'])} input(s), "
                f"{len(rec['ranks_seen'])} rank(s) seen, {rec['summary']['lines_read']} lines read.\n\n")
    head.append(md_fence("\n".join(i["path"] for i in rec["inputs"])) + "\n")
    if rec["findings"]:
        head.append("| # | severity | signature | initiating rank | first step |\n|---|---|---|---|---|\n")
    table = [f"| {i} | {f['severity']} | `{f['id']}` | {_cell(f['initiating_rank'])} | {_cell(f['first_step'])} |\n"
             for i, f in enumerate(rec["findings"], 1)]
    ledger = _ledger(rec["ranks"])
    notes = "".join(f"- note `{md_inline(d['code'])}`:\n\n" + md_fence(
        (f"{d['source']}:{d['line']}: " if d["source"] else "") + d["message"]) + "\n" for d in rec["diagnostics"])

    text = "".join(head)
    limit = budget - _TAIL_RESERVE
    shown_rows = 0
    for row in table:
        if _size(text) + _size(row) > limit // 4:  # the table never takes more than a quarter
            break
        text += row
        shown_rows += 1
    if shown_rows < len(table):
        text += f"| … | {len(table) - shown_rows} more | | | |\n"
    text += "\n"
    shown = 0
    for i, f in enumerate(rec["findings"], 1):
        section = _finding(i, f)
        if _size(text) + _size(section) + _size(ledger) > limit:
            break
        text += section
        shown += 1
    if shown < n:
        text += f"**…{n - shown} more finding(s)**: see the JSON report (`--format json`) or the job artifact.\n\n"
    for extra in (ledger, notes):
        if _size(text) + _size(extra) <= budget - 200:
            text += extra
    out.write(text)
