"""--format html: one self-contained page (no script, no external resource: it renders under
`default-src 'none'; style-src 'unsafe-inline'; img-src data:`, and says so in its own CSP meta).

What a person looking at a bad run wants to see: the findings (evidence, fix, verify), then loss,
grad norm and loss scale over steps for all ranks together (the initiating rank drawn over the
others) and per rank, NaN / inf values and skipped steps marked, each finding's steps shaded; a
timeline of the decisive events per rank; the per-rank table. Light and dark follow
prefers-color-scheme; the page prints.

The curves come downsampled from the run (nanscope.series: min / max per bucket, marks never
dropped); here they are merged once more to the plot's pixel columns. Log text is untrusted:
every string goes through `_t` (redaction, control characters made visible, HTML-escaped).
"""

from __future__ import annotations

from typing import IO, Any, Optional

from nanscope.model import Finding, Report
from nanscope.redact import redact
from nanscope.report.base import number
from nanscope.report.sanitize import html_text
from nanscope.report.svg import Chart, Curve, LaneEvent, Mark, Shade, line_chart, timeline
from nanscope.signatures.engine import fmt_ranks

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
PLOT_W = 590
MAX_OVERLAY = 32  # ranks drawn in the all-ranks charts
MAX_PER_RANK = 16  # ranks with their own small charts
MAX_SHADES = 40
METRICS = (("loss", "loss"), ("grad_norm", "grad norm"), ("loss_scale", "loss scale"))

_CSS = """
:root{--bg:#fff;--fg:#1b1f24;--mute:#59636e;--line:#d0d7de;--card:#f6f8fa;--init:#8250df;--other:#8c959f;
--shade:rgba(191,135,0,.16);--nan:#cf222e;--skip:#bf8700;--accent:#0969da;--sev-critical:#a40e26;--sev-high:#cf222e;
--sev-medium:#9a6700;--sev-low:#0969da;--sev-info:#59636e}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;--line:#30363d;--card:#161b22;
--init:#d2a8ff;--other:#6e7681;--shade:rgba(210,153,34,.22);--nan:#ff7b72;--skip:#d29922;--accent:#58a6ff;
--sev-critical:#ff7b72;--sev-high:#ff7b72;--sev-medium:#d29922;--sev-low:#58a6ff;--sev-info:#9198a1}}
*{box-sizing:border-box}body{margin:0 auto;max-width:1240px;padding:16px 20px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:0 0 6px}.mute{color:var(--mute)}.verdict{font-weight:700}
.v-actionable{color:var(--sev-high)}.v-retryable{color:var(--sev-medium)}.v-clean,.v-benign{color:#1a7f37}
.finding{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:8px 0;break-inside:avoid}
.sev{font-weight:700;text-transform:uppercase;font-size:12px;margin-right:6px}
.sev-critical{color:var(--sev-critical)}.sev-high{color:var(--sev-high)}.sev-medium{color:var(--sev-medium)}
.sev-low{color:var(--sev-low)}.sev-info{color:var(--sev-info)}
dl{display:grid;grid-template-columns:80px 1fr;gap:2px 10px;margin:6px 0}dt{font-weight:600;color:var(--mute)}dd{margin:0}
pre{margin:0;white-space:pre-wrap;word-break:break-all;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.grid2{display:flex;flex-wrap:wrap;gap:8px}.rankrow{display:flex;flex-wrap:wrap;gap:6px;align-items:flex-start;margin:4px 0}
.rankrow h3{width:100%;margin:6px 0 0}
svg{background:var(--bg);max-width:100%;height:auto}svg .frame{fill:none;stroke:var(--line)}
svg .grid{stroke:var(--line);stroke-dasharray:2 3}svg .tick{fill:var(--mute);font-size:10px}
svg .ctitle{fill:var(--fg);font-size:11px;font-weight:600}svg .strong{fill:var(--init);font-weight:700}
svg .curve{fill:none;stroke-width:1.2;stroke-linejoin:round}svg .curve.other{stroke:var(--other);stroke-width:1}
svg .curve.solo{stroke:var(--accent)}svg .curve.init{stroke:var(--init);stroke-width:2.2}
svg .shade{fill:var(--shade)}svg .mark.nan,svg .markrun.nan{fill:var(--nan)}svg .mark.skip,svg .markrun.skip{fill:var(--skip)}
svg .nanline{stroke:var(--nan);stroke-width:1;stroke-dasharray:3 2;opacity:.7}
svg .lane{stroke:var(--line)}svg .lane.init{stroke:var(--init)}svg .ev{stroke:var(--bg);stroke-width:1}
svg .ev.nonfinite{fill:var(--nan)}svg .ev.error,svg .ev.exit{fill:var(--fg)}svg .ev.timeout{fill:var(--accent)}
svg .ev.skip{fill:var(--skip)}svg .ev.teardown,svg .ev.end,svg .ev.restart{fill:var(--other)}
table{border-collapse:collapse;font-size:13px}th,td{padding:3px 10px;border-bottom:1px solid var(--line);text-align:right}
th:first-child,td:first-child{text-align:left}tr.init td{color:var(--init);font-weight:600}
.legend span{margin-right:14px}.sw{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:4px}
@media print{body{max-width:none;padding:0;font-size:11px}.finding{break-inside:avoid}svg{break-inside:avoid}
h2{break-after:avoid}}
"""


def _t(text: Any, do_redact: bool, max_len: int = 2000) -> str:
    s = str(text)
    return html_text(redact(s) if do_redact else s, max_len)


def _initiating(report: Report) -> Optional[int]:
    for f in report.findings:
        if f.initiating_rank is not None and not f.benign:
            return f.initiating_rank
    for f in report.findings:
        if f.initiating_rank is not None:
            return f.initiating_rank
    return None


def _steps_of(f: Finding) -> list[tuple[int, int]]:
    """The step ranges a finding covers: per match, its step to the last step of its evidence."""
    out = []
    for m in f.matches[:MAX_SHADES]:
        steps = [e.step for e in getattr(m, "events", ()) if getattr(e, "step", None) is not None]
        if m.step is not None:
            steps.append(m.step)
        if steps:
            out.append((min(steps), max(steps)))
    if not out and f.first_step is not None:
        out.append((f.first_step, f.first_step))
    return out


def _shades(report: Report, rank: Optional[int]) -> list[Shade]:
    out = []
    for f in report.findings:
        if rank is not None and f.ranks and rank not in f.ranks and rank not in f.collateral_ranks:
            continue
        for lo, hi in _steps_of(f):
            where = f"step {lo}" if lo == hi else f"steps {lo}-{hi}"
            out.append(Shade(lo, hi, f"{f.id}: {where}"))
    return out[:MAX_SHADES]


def _curve(s: Any, name: str, lo: int, hi: int, cls: str, n: int) -> Optional[Curve]:
    if name not in s.mins:
        return None
    b = s.buckets(lo, hi, n)
    return Curve(steps=b.lo, mins=b.mins[name], maxs=b.maxs[name], cls=cls, title=s.label)


def _marks(s: Any, name: str, lo: int, hi: int, n: int, label: str) -> list[Mark]:
    b = s.buckets(lo, hi, n)
    out = []
    for st in b.nonfinite.get(name, ()):
        if st >= 0:
            out.append(Mark(int(st), "nan", f"{s.label}: {label} non-finite at step {int(st)}", s.label))
    for st in b.skipped:
        if st >= 0:
            out.append(Mark(int(st), "skip", f"{s.label}: update skipped at step {int(st)}", s.label))
    return out


def _charts(report: Report, series: list, init: Optional[int], lo: int, hi: int) -> tuple[str, str]:
    n = PLOT_W - 68
    overview, per_rank = [], []
    drawn = series[:MAX_OVERLAY]
    for name, label in METRICS:
        with_it = [s for s in drawn if s.has(name) or s.nonfinite.get(name) is not None]
        if not with_it:
            continue
        solo = len(with_it) == 1 or init is None
        ch = Chart(title=f"{label}, all ranks" if len(with_it) > 1 else label, lo=lo, hi=hi, width=PLOT_W,
                   name=f"all:{name}", shades=_shades(report, None))
        for s in with_it:
            cls = "init" if s.rank is not None and s.rank == init else ("solo" if solo else "other")
            c = _curve(s, name, lo, hi, cls, n)
            if c is not None:
                ch.curves.append(c)
            ch.marks.extend(_marks(s, name, lo, hi, n, label))
        overview.append(line_chart(ch))
    order = sorted(series, key=lambda s: (s.rank != init, not _in_findings(report, s.rank)))[:MAX_PER_RANK]
    for s in order:
        charts = []
        for name, label in METRICS:
            if not (s.has(name) or s.nonfinite.get(name) is not None):
                continue
            cls = "init" if s.rank is not None and s.rank == init else "solo"
            ch = Chart(title=label, lo=lo, hi=hi, width=420, height=120, name=f"{s.label}:{name}",
                       shades=_shades(report, s.rank))
            c = _curve(s, name, lo, hi, cls, 420 - 68)
            if c is not None:
                ch.curves.append(c)
            ch.marks = _marks(s, name, lo, hi, 420 - 68, label)
            charts.append(line_chart(ch))
        if charts:
            tag = " (initiating rank)" if s.rank is not None and s.rank == init else ""
            per_rank.append(f'<div class="rankrow"><h3>{_t(s.label, False, 80)}{tag}</h3>{"".join(charts)}</div>')
    more = len(series) - len(order)
    if more > 0:
        per_rank.append(f'<p class="mute">{more} more rank(s) without their own charts (see the table).</p>')
    return "".join(overview), "".join(per_rank)


def _in_findings(report: Report, rank: Optional[int]) -> bool:
    return rank is not None and any(rank in f.ranks for f in report.findings)


def _timeline(series: list, init: Optional[int], lo: int, hi: int, do_redact: bool) -> str:
    lanes = []
    rows = []
    for s in series[:MAX_OVERLAY]:
        evs = []
        for e in s.events:
            title = f"{s.label}: {e.label}" + (f" at step {e.step}" if e.step is not None else "") + f" ({e.source}:{e.line})"
            if e.step is not None:
                evs.append(LaneEvent(e.step, e.kind, _plain(title, do_redact)))
            rows.append((s, e))
        if evs:
            lanes.append((s.label, s.rank is not None and s.rank == init, evs))
    if not rows:
        return ""
    with_ts = all(e.ts is not None for _, e in rows)
    rows.sort(key=lambda r: ((r[1].ts if with_ts else 0), r[1].step is None, r[1].step or 0, r[1].source, r[1].line))
    svg = timeline(lanes, lo, hi, PLOT_W) if lanes else ""
    order = "time" if with_ts else "step"
    items = "".join(
        f"<tr><td>{_t(s.label, do_redact, 80)}</td><td>{_t(e.kind, False)}</td><td>{'' if e.step is None else e.step}</td>"
        f"<td style=\"text-align:left\">{_t(e.label, do_redact, 200)}</td><td style=\"text-align:left\"><code>{_t(e.source, do_redact, 200)}:{e.line}</code></td></tr>"
        for s, e in rows[:60])
    return (f"<h2>Timeline</h2><p class=\"mute\">Decisive events per rank (first non-finite value, errors, exits, "
            f"timeouts, loss-scale drops), in {order} order.</p>{svg}"
            f"<table><tr><th>rank</th><th>event</th><th>step</th><th style=\"text-align:left\">what</th>"
            f"<th style=\"text-align:left\">where</th></tr>{items}</table>")


def _plain(text: str, do_redact: bool) -> str:
    """Text for an SVG <title> (svg.py escapes it): redacted, control characters visible."""
    from nanscope.report.sanitize import terminal

    return terminal(redact(text) if do_redact else text, 300)


def _finding(f: Finding, i: int, do_redact: bool) -> str:
    rank = (f"initiating rank {f.initiating_rank} ({_t(f.confidence, False)} confidence)"
            if f.initiating_rank is not None else "initiating rank unknown")
    extra = ""
    if f.decided_by:
        extra += f"<br><span class=\"mute\">{_t(f.decided_by, do_redact)}</span>"
    if f.collateral_ranks:
        extra += f"<br><span class=\"mute\">collateral: ranks {_t(fmt_ranks(f.collateral_ranks), False)}</span>"
    coll = "".join(f"<li>ranks {_t(fmt_ranks(c.ranks), False)}: {_t(c.title, do_redact, 300)} <code>{_t(c.id, False)}</code></li>"
                   for c in f.collateral)
    ev = "\n".join(f"{_t(e.source, do_redact, 200)}:{e.line}  {_t(e.text, do_redact, 600)}" for e in f.evidence)
    rows = [("what", _t(f.summary, do_redact)), ("rank", rank + extra + (f"<ul>{coll}</ul>" if coll else ""))]
    if ev:
        rows.append(("evidence", f"<pre>{ev}</pre>"))
    rows += [("cause", _t(f.root_cause, False)), ("fix", _t(f.fix, False)),
             ("verify", f"<code>{_t(f.verify, False)}</code>")]
    if f.also_matched:
        rows.append(("also", _t(", ".join(f.also_matched), False)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return (f'<section class="finding" id="finding-{i}" data-id="{_t(f.id, False)}" data-step="{f.first_step if f.first_step is not None else ""}">'
            f'<h3><span class="sev sev-{_t(f.severity, False)}">{_t(f.severity, False)}</span>'
            f"<code>{_t(f.id, False)}</code> {_t(f.title, do_redact, 300)}</h3><dl>{dl}</dl></section>")


def _fmt(v: Any) -> str:
    v = number(v)
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _table(report: Report, init: Optional[int]) -> str:
    if not report.ranks:
        return ""
    head = "".join(f"<th>{c}</th>" for c in ("rank", "steps", "first", "last", "non-finite", "skipped", "loss scale", "last loss"))
    rows = []
    for s in report.ranks:
        scale = "-" if s.loss_scale_min is None else f"{_fmt(s.loss_scale_min)}..{_fmt(s.loss_scale_max)}"
        cls = ' class="init"' if s.rank is not None and s.rank == init else ""
        cells = [_t(s.label, False, 80), s.steps, _fmt(s.first_step), _fmt(s.last_step), s.nonfinite_steps,
                 s.skipped_steps, scale, _fmt(s.last_loss)]
        rows.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<h2>Per-rank steps</h2><table><tr>{head}</tr>{''.join(rows)}</table>"


def render(report: Report, out: IO[str], options: Any = None) -> None:
    do_redact = getattr(options, "redact", True)
    init = _initiating(report)
    series = [s for s in report.series if s.first_step is not None or s.events]
    with_steps = [s for s in series if s.first_step is not None]
    inputs = ", ".join(_t(i.path, do_redact, 200) for i in report.inputs[:3])
    if len(report.inputs) > 3:
        inputs += f" and {len(report.inputs) - 3} more"
    ranks = sorted({s.rank for s in report.ranks if s.rank is not None})
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>nanscope: {_t(report.verdict, False)} - {inputs}</title><style>{_CSS}</style></head><body>",
        f'<h1>nanscope: <span class="verdict v-{_t(report.verdict, False)}">{_t(report.verdict.upper(), False)}</span></h1>',
        f'<p class="mute">{len(report.findings)} finding(s) in {inputs}'
        + (f" ({len(ranks)} rank(s): {_t(fmt_ranks(ranks), False)})" if ranks else "")
        + (f"; initiating rank <b>{init}</b>" if init is not None else "") + "</p>",
    ]
    if report.findings:
        parts.append("<h2>Findings</h2>")
        parts.extend(_finding(f, i, do_redact) for i, f in enumerate(report.findings, 1))
    if with_steps:
        lo = min(s.first_step for s in with_steps)
        hi = max(s.last_step for s in with_steps)
        overview, per_rank = _charts(report, with_steps, init, lo, hi)
        legend = ('<p class="legend mute">'
                  + ('<span><i class="sw" style="background:var(--init)"></i>initiating rank</span>'
                     '<span><i class="sw" style="background:var(--other)"></i>other ranks</span>' if init is not None else "")
                  + '<span><i class="sw" style="background:var(--nan)"></i>non-finite (NaN / inf)</span>'
                  '<span><i class="sw" style="background:var(--skip)"></i>skipped step</span>'
                  '<span><i class="sw" style="background:var(--shade);height:10px"></i>steps of a finding</span></p>')
        parts.append(f"<h2>Curves</h2>{legend}<div class=\"grid2\">{overview}</div>")
        if len(with_steps) > 1 or per_rank:
            parts.append(f"<h2>Per rank</h2>{per_rank}")
    else:
        lo = hi = 0
    if series:
        parts.append(_timeline(series, init, lo, hi, do_redact))
    parts.append(_table(report, init))
    if report.diagnostics:
        items = "".join(f"<li><code>{_t(d.code, False)}</code> "
                        f"{_t(d.source or '', do_redact, 200)}{':' + str(d.line) if d.line else ''} {_t(d.message, do_redact, 500)}</li>"
                        for d in report.diagnostics)
        parts.append(f"<h2>Notes</h2><ul>{items}</ul>")
    parts.append(f'<p class="mute">nanscope {_t(report.tool_version, False)}</p></body></html>\n')
    out.write("".join(parts))
