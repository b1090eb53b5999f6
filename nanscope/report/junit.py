"""--format junit: JUnit XML for GitLab `artifacts:reports:junit` and JUnit viewers.

One <testsuite name="nanscope">, one <testcase> per signature of the library
(classname "nanscope.<category>", name = the signature id), so passing checks are visible as
passing tests and "0 failures" means something. A finding of severity medium or above that is not
benign is a <failure type="<id>"> carrying the summary, the evidence, the fix and how to verify
it; benign, low and info findings pass with their summary in <system-out>. One more testcase per
input says whether it was read completely (an <error> if not).

Every text and attribute goes through sanitize.xml(): ElementTree writes XML-1.0-illegal
characters (ESC, NUL) verbatim and then cannot parse its own output.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import IO

from nanscope.model import Report
from nanscope.report.base import report_record
from nanscope.report.sanitize import xml

_FAILING = {"medium", "high", "critical"}


def library(report: Report) -> list[tuple[str, str, str]]:
    """(id, category, title) of the loaded signatures: from the Report if it carries them,
    else the bundled library."""
    sigs = getattr(report, "signatures", None)
    if sigs is None:
        from nanscope.signatures.loader import load_or_raise

        sigs = load_or_raise()
    return [(s.id, s.category, s.title) for s in sigs]


def _details(f: dict, role: str = "") -> str:
    lines = [f"{f['id']} ({f['severity']}{role}): {f['summary']}"]
    if f["initiating_rank"] is not None:
        lines.append(f"initiating rank {f['initiating_rank']} ({f['confidence']} confidence): {f['decided_by']}")
    if f["collateral_ranks"]:
        lines.append("collateral ranks: " + ", ".join(str(r) for r in f["collateral_ranks"]))
    if f["first_step"] is not None:
        lines.append(f"first step: {f['first_step']}")
    if f["evidence"]:
        lines.append("evidence:")
        lines += [f"  {e['source']}:{e['line']}  {e['text']}" for e in f["evidence"]]
    lines += [f"cause: {' '.join(f['root_cause'].split())}", f"fix: {' '.join(f['fix'].split())}",
              f"verify: {' '.join(f['verify'].split())}"]
    return "\n".join(lines)


def _el(parent: ET.Element, tag: str, text: str = "", **attrs: str) -> ET.Element:
    e = ET.SubElement(parent, tag, {k: xml(v) for k, v in attrs.items()})
    if text:
        e.text = xml(text)
    return e


def render(report: Report, out: IO[str], options: object = None) -> None:
    rec = report_record(report, getattr(options, "redact", True))
    by_id: dict[str, list[tuple[dict, str]]] = {}
    for f in rec["findings"]:
        by_id.setdefault(f["id"], []).append((f, ""))
        for c in f["collateral"]:
            by_id.setdefault(c["id"], []).append((c, f", collateral of {f['id']}"))
    cases = [(sid, cat, title) for sid, cat, title in library(report)]
    known = {c[0] for c in cases}
    for f in rec["findings"]:  # findings of signatures outside the bundled library (user packs)
        for x in [f] + f["collateral"]:
            if x["id"] not in known:
                known.add(x["id"])
                cases.append((x["id"], x["category"], x["title"]))
    cases.sort(key=lambda c: (c[1], c[0]))

    suites = ET.Element("testsuites", name="nanscope")
    suite = _el(suites, "testsuite", name="nanscope")
    failures = errors = 0
    for inp in rec["inputs"]:
        case = _el(suite, "testcase", classname="nanscope.input", name=f"read {inp['path']}")
        if inp["error"] or not inp["complete"]:
            errors += 1
            _el(case, "error", inp["error"] or "the input ended early (truncated or unreadable)",
                type="input", message=inp["error"] or "incomplete input")
    for sid, cat, title in cases:
        case = _el(suite, "testcase", classname=f"nanscope.{cat}", name=sid)
        hits = by_id.get(sid, [])
        failing = [(f, role) for f, role in hits if f["severity"] in _FAILING and not f["benign"]]
        if failing:
            failures += 1
            f = failing[0][0]
            _el(case, "failure", "\n\n".join(_details(x, role) for x, role in failing),
                type=sid, message=f"{title}: {f['summary']}")
        elif hits:
            _el(case, "system-out", "\n\n".join(_details(x, role) for x, role in hits))
    n = len(suite)
    for e in (suites, suite):
        e.set("tests", str(n))
        e.set("failures", str(failures))
        e.set("errors", str(errors))
    suite.set("skipped", "0")
    ET.indent(suites)
    out.write(ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")
