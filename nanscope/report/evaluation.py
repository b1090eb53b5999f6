"""`nanscope eval` results as text (tables per framework and per failure class, then the misses)
or JSON. Renders an EvalResult; computes nothing but percentages."""

from __future__ import annotations

import json
from typing import IO

from nanscope.evaluate import EvalResult, Outcome, Tally
from nanscope.report.sanitize import json_text, terminal

_COLS = ("cases", "detected", "first", "rank", "step", "healthy", "false alarms")


def _frac(a: int, b: int) -> str:
    return f"{a}/{b} {100.0 * a / b:3.0f}%" if b else "-"


def _row(name: str, t: Tally, width: int) -> str:
    cells = (str(t.failures + t.healthy), _frac(t.detected, t.failures), _frac(t.first, t.failures),
             _frac(t.rank_right, t.ranked), _frac(t.step_right, t.stepped), str(t.healthy),
             str(t.false_alarms) if t.healthy else "-")
    return f"{terminal(name)[:width]:<{width}} " + " ".join(f"{c:>12}" for c in cells)


def _table(title: str, rows: dict[str, Tally], total: Tally) -> list[str]:
    width = max([len(title), 8] + [len(k) for k in rows])
    width = min(width, 34)
    lines = [f"{title:<{width}} " + " ".join(f"{c:>12}" for c in _COLS)]
    lines += [_row(k, t, width) for k, t in rows.items()]
    lines.append(_row("all", total, width))
    return lines


def _miss_line(o: Outcome) -> str:
    c = o.case
    if o.error:
        said = f"error: {o.error}"
    elif c.healthy:
        said = f"healthy, but verdict {o.verdict}: " + ", ".join(o.findings)
    else:
        want = c.failure + (f" (or {', '.join(sorted(c.right_ids - {c.failure}))})" if len(c.right_ids) > 1 else "")
        got = ", ".join(o.findings) or "nothing (clean)"
        said = f"expected {want}; said {got}"
        if o.rank_right is False:
            said += f"; initiating rank {c.initiating_rank} expected, said {o.rank if o.rank is not None else 'none'}"
    return terminal(f"  {c.name} [{c.framework}] {said}", max_len=600)


def render_text(result: EvalResult, out: IO[str], show_misses: bool = True) -> None:
    total = result.total
    n_manifests = len({o.case.manifest for o in result.outcomes})
    out.write(f"nanscope eval {terminal(result.root)}: {len(result.outcomes)} case(s) "
              f"({total.failures} failure(s), {total.healthy} healthy trap(s)) from {n_manifests} manifest(s)\n\n")
    out.write("\n".join(_table("framework", result.by_framework(), total)) + "\n\n")
    out.write("\n".join(_table("failure class", result.by_failure(), total)) + "\n")
    if result.unknown_ids:
        out.write("\nexpected ids that no loaded signature has (add the signature or fix the label):\n")
        for sig_id, names in sorted(result.unknown_ids.items()):
            out.write(terminal(f"  {sig_id}: {len(names)} case(s), e.g. {names[0]}") + "\n")
    misses = result.misses()
    if show_misses and misses:
        out.write(f"\nmisses ({len(misses)}):\n")
        for o in misses:
            out.write(_miss_line(o) + "\n")
    out.write("\n")
    out.write(f"detected         {_frac(total.detected, total.failures)}\n")
    out.write(f"first finding    {_frac(total.first, total.failures)}\n")
    out.write(f"initiating rank  {_frac(total.rank_right, total.ranked)}\n")
    out.write(f"false alarms     {total.false_alarms}/{total.healthy} healthy\n")


def render_json(result: EvalResult, out: IO[str]) -> None:
    out.write(json_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)))
    out.write("\n")
