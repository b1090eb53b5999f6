"""Run the [[examples]] of signature files, and lint them.

Each example is diagnosed as a log of its own with the whole bundled library loaded (plus the
folders given), so an example also proves that no other signature steals or hides its match.
"""

from __future__ import annotations

from typing import Iterable, Optional

from nanscope.errors import SignatureError
from nanscope.signatures.loader import load
from nanscope.signatures.schema import Example, Signature


def diagnose_text(log: str, sigs: list[Signature], source: str = "example.log"):
    from nanscope.api import Options, diagnose_sources
    from nanscope.ingest.reader import Source

    data = log.lstrip("\n").encode("utf-8")
    return diagnose_sources([Source(source, None, data)], Options(bundled_signatures=sigs))


def check_example(sig: Signature, ex: Example, sigs: list[Signature]) -> Optional[str]:
    """None if the example behaves as declared, else what went wrong."""
    report = diagnose_text(ex.log, sigs, ex.source)
    found = _find(report.findings, sig.id)
    where = f"{sig.path}:{ex.line}: {sig.id}: example '{ex.name}'"
    if ex.expect == "no-match":
        return f"{where}: expected no match, but it matched: {found.summary}" if found else None
    if found is None:
        ids = ", ".join(f.id for f in report.findings) or "nothing"
        return f"{where}: expected a match, got {ids}"
    if ex.step is not None and found.first_step != ex.step:
        return f"{where}: expected step {ex.step}, got {found.first_step}"
    if ex.initiating_rank is not None and found.initiating_rank != ex.initiating_rank:
        return f"{where}: expected initiating rank {ex.initiating_rank}, got {found.initiating_rank} ({found.decided_by})"
    return None


def _find(findings, sig_id: str):
    for f in findings:
        if f.id == sig_id:
            return f
        for c in f.collateral:
            if c.id == sig_id:
                return c
        if sig_id in f.also_matched:
            return f
    return None


def run_examples(extra_dirs: Iterable[str] = ()) -> tuple[list[str], int]:
    dirs = list(extra_dirs)
    sigs, errors = load(dirs)
    if errors:
        return [str(e) for e in errors], len(errors)
    targets = [s for s in sigs if not dirs or any(_under(s.path, d) for d in dirs)]
    failures: list[str] = []
    total = 0
    for s in targets:
        for ex in s.examples:
            total += 1
            msg = check_example(s, ex, sigs)
            if msg:
                failures.append(msg)
    return failures, total


def lint(extra_dirs: Iterable[str] = ()) -> list[str]:
    dirs = list(extra_dirs)
    sigs, errors = load(dirs)
    problems = [str(e) for e in errors]
    for s in sigs:
        if dirs and not any(_under(s.path, d) for d in dirs):
            continue
        if not any(e.expect == "match" for e in s.examples) or not any(e.expect == "no-match" for e in s.examples):
            problems.append(str(SignatureError("needs at least one 'match' and one 'no-match' example", s.path)))
        if not s.references:
            problems.append(str(SignatureError("cite the framework source file the evidence comes from in references", s.path)))
        for r in s.related:
            if r not in {x.id for x in sigs}:
                problems.append(str(SignatureError(f"related id '{r}' is not a known signature", s.path)))
    seen: dict = {}
    for s in sigs:
        key = repr(sorted(s.match.items()))
        if key in seen:
            problems.append(str(SignatureError(f"[match] is identical to {seen[key]}'s: a copy under another name", s.path)))
        seen.setdefault(key, s.id)
    return problems


def _under(path: str, d: str) -> bool:
    import os

    return os.path.abspath(path).startswith(os.path.abspath(d))
