"""The fleet summary (nanscope.fleet.summarize) as text or JSON. Job names and hosts come from
the file system and the log text: they are sanitized like any log text."""

from __future__ import annotations

import datetime as dt
import json
from typing import IO

from nanscope.report.sanitize import gh_defuse, json_text, terminal


def _safe(text: str) -> str:
    return gh_defuse(terminal(text, 200))


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if t else "?"


def render_json(summary: dict, out: IO[str]) -> None:
    out.write(json_text(json.dumps(summary, indent=2, sort_keys=False, allow_nan=False)) + "\n")


def _names(names: list, limit: int = 6) -> str:
    shown = ", ".join(_safe(str(n)) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def render_text(summary: dict, out: IO[str]) -> None:
    v = summary["verdicts"]
    bad = summary["jobs"] - v.get("clean", 0) - v.get("benign", 0)
    out.write(f"nanscope fleet: {summary['jobs']} job(s), {bad} needing attention "
              f"({', '.join(f'{n} {k}' for k, n in sorted(v.items()))})\n")
    if summary["failed_jobs"]:
        out.write(f"  could not be diagnosed: {_names(summary['failed_jobs'])}\n")
    if summary["suspect_hosts"] or summary["suspect_gpus"]:
        out.write("\nSuspect hardware (the same host behind hardware-class failures of several jobs):\n")
        for s in summary["suspect_hosts"]:
            out.write(f"  host {_safe(s['host'])}: {len(s['jobs'])} jobs ({', '.join(s['findings'])}): "
                      f"{_names(s['jobs'])}\n")
        for s in summary["suspect_gpus"]:
            out.write(f"  gpu {_safe(s['gpu'])}: {len(s['jobs'])} jobs ({', '.join(s['findings'])}): "
                      f"{_names(s['jobs'])}\n")
        out.write("  -> drain the host and run the vendor's diagnostics (e.g. `dcgmi diag -r 3`) before "
                  "scheduling on it again.\n")
    if summary["rollouts"]:
        out.write("\nSince a point in time, in every job (a change rolled out?):\n")
        for r in summary["rollouts"]:
            out.write(f"  {r['id']}: every job since {_safe(r['since_job'])} ({_when(r['since_time'])}), "
                      f"{r['jobs_since']} job(s); {r['jobs_before_with_it']} of the {r['jobs_before']} before had it\n")
    if summary["classes"]:
        out.write("\nFailure classes by jobs affected:\n")
        for c in summary["classes"]:
            out.write(f"  {c['jobs']:>5} job(s)  {c['id']} ({c['category']}, {c['findings']} finding(s))\n")
    else:
        out.write("\nNo findings in any job.\n")
