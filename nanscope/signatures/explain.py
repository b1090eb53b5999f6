"""`nanscope explain ID`: the encyclopedia entry of a signature, offline, as plain text."""

from __future__ import annotations

import textwrap

from nanscope.signatures.schema import Signature


def _para(title: str, body: str) -> str:
    body = " ".join(body.split())
    if not body:
        return ""
    return f"{title}\n" + textwrap.fill(body, width=96, initial_indent="  ", subsequent_indent="  ") + "\n\n"


def explain_text(s: Signature) -> str:
    out = [f"{s.id} (revision {s.revision}, {s.status})\n{s.title}\n",
           f"severity: {s.severity}   category: {s.category}   retryable: {'yes' if s.retryable else 'no'}"
           f"   frameworks: {', '.join(s.frameworks)}\n\n"]
    out.append(_para("What it is", s.description))
    out.append(_para("Mechanism", s.mechanism or s.root_cause))
    if s.symptoms:
        out.append("Symptoms, and what each means\n" + "".join(
            textwrap.fill(x, width=96, initial_indent="  - ", subsequent_indent="    ") + "\n" for x in s.symptoms) + "\n")
    out.append(_para("When it is benign", s.benign_when))
    if s.confirm:
        out.append("How to confirm\n" + "".join(
            textwrap.fill(c, width=96, initial_indent="  [ ] ", subsequent_indent="      ") + "\n" for c in s.confirm) + "\n")
    out.append(_para("Fix", s.fix))
    out.append(_para("Prevention", s.prevention))
    out.append(_para("Verify the fix", s.verify))
    if s.related:
        out.append("Related: " + ", ".join(s.related) + "\n\n")
    out.append("References\n" + "".join(f"  - {r}\n" for r in s.references))
    ex = [e for e in s.examples if e.expect == "match"]
    if ex:
        out.append("\nWhat it looks like in a log (" + ex[0].name + ")\n")
        out.append(textwrap.indent(ex[0].log.strip("\n"), "  ") + "\n")
    return "".join(out)
