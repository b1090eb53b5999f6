"""What a signature file holds, and the checks made when it is loaded.

Every problem is reported with the file and the line of the offending key, and all problems of
all files are collected before anything fails (a linter run shows them together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from nanscope.errors import SignatureError
from nanscope.signatures.machines import MACHINES, Machine

SEVERITIES = ("info", "low", "medium", "high", "critical")
STATUSES = ("stable", "test", "experimental", "deprecated")
ROLES = ("primary", "collateral", "symptom", "context")
CATEGORIES = ("numerics", "distributed", "memory", "gpu", "inference", "job", "data", "checkpoint", "custom")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

TOP_KEYS = {
    "id": True, "title": True, "category": True, "severity": True, "status": True, "revision": True,
    "frameworks": True, "retryable": False, "benign": False, "role": False, "rank_evidence": False,
    "supersedes": False, "tier": False, "match": True, "diagnosis": True, "examples": True, "description": False,
}
DIAGNOSIS_KEYS = {
    "summary": True, "root_cause": True, "benign_when": True, "fix": True, "verify": True,
    "references": True, "related": False, "mechanism": False, "confirm": False, "prevention": False,
    "symptoms": False,
}
EXAMPLE_KEYS = {"name": True, "expect": True, "log": True, "initiating_rank": False, "step": False,
                "source": False, "note": False}


@dataclass(frozen=True)
class Example:
    name: str
    expect: str  # match | no-match
    log: str
    initiating_rank: Optional[int] = None
    step: Optional[int] = None
    source: str = "example.log"
    line: int = 0


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    category: str
    severity: str
    status: str
    revision: int
    frameworks: tuple
    retryable: bool
    benign: bool
    role: str
    rank_evidence: bool
    supersedes: tuple
    tier: Optional[int]
    match: dict
    summary: str
    root_cause: str
    benign_when: str
    fix: str
    verify: str
    references: tuple
    related: tuple
    mechanism: str
    confirm: tuple
    prevention: str
    symptoms: tuple
    description: str
    examples: tuple
    path: str = ""

    def new_machine(self) -> Machine:
        return MACHINES[self.match["machine"]](self.id, self.match)

    @property
    def events(self) -> set[str]:
        return self.new_machine().events


def key_line(text: str, key: str, after: int = 0) -> int:
    """Best-effort line number of `key = ...` (or `[key]`) in a TOML text."""
    rx = re.compile(rf"^\s*(?:{re.escape(key)}\s*=|\[+\s*{re.escape(key)}\s*\]+)", re.M)
    m = rx.search(text, after)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def build(data: dict, path: str, text: str) -> tuple[Optional[Signature], list[SignatureError]]:
    errs: list[SignatureError] = []

    def err(msg: str, key: str = "") -> None:
        errs.append(SignatureError(msg, path, key_line(text, key) if key else None))

    for k, required in TOP_KEYS.items():
        if required and k not in data:
            err(f"missing required key '{k}'")
    for k in data:
        if k not in TOP_KEYS:
            err(f"unknown key '{k}'", k)
    sid = data.get("id", "")
    if sid and not (isinstance(sid, str) and _ID.match(sid)):
        err(f"id {sid!r} must be lower-case words joined by '-'", "id")
    if data.get("severity") not in SEVERITIES:
        err(f"severity must be one of {', '.join(SEVERITIES)}", "severity")
    if data.get("status") not in STATUSES:
        err(f"status must be one of {', '.join(STATUSES)}", "status")
    if data.get("category") not in CATEGORIES:
        err(f"category must be one of {', '.join(CATEGORIES)}", "category")
    if data.get("role", "primary") not in ROLES:
        err(f"role must be one of {', '.join(ROLES)}", "role")
    if data.get("tier") not in (None, 1, 2, 3):
        err("tier (the evidence tier this signature's matches give for the initiating rank) is 1, 2 or 3", "tier")
    if not isinstance(data.get("revision", 1), int):
        err("revision must be an integer", "revision")
    for k in ("retryable", "benign", "rank_evidence"):
        if not isinstance(data.get(k, False), bool):
            err(f"{k} must be true or false", k)
    diag = data.get("diagnosis", {})
    if not isinstance(diag, dict):
        err("[diagnosis] must be a table", "diagnosis")
        diag = {}
    for k, required in DIAGNOSIS_KEYS.items():
        if required and not diag.get(k):
            err(f"[diagnosis] needs a non-empty '{k}'", "diagnosis")
    for k in diag:
        if k not in DIAGNOSIS_KEYS:
            err(f"unknown key '{k}' in [diagnosis]", k)
    for k in ("references", "related", "confirm", "symptoms"):
        v = diag.get(k)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            err(f"{k} must be a list of strings", k)
    match = data.get("match", {})
    if not isinstance(match, dict) or "machine" not in match:
        err("[match] needs 'machine'", "match")
    elif match["machine"] not in MACHINES:
        err(f"unknown machine {match['machine']!r} (known: {', '.join(MACHINES)})", "machine")
    else:
        try:
            MACHINES[match["machine"]](sid or "?", match)
        except SignatureError as e:
            err(f"[match]: {e.message}", "match")
    examples = []
    raw_examples = data.get("examples", [])
    if not isinstance(raw_examples, list):
        err("[[examples]] must be an array of tables", "examples")
        raw_examples = []
    lines = _example_lines(text)
    for i, ex in enumerate(raw_examples):
        line = lines[i] if i < len(lines) else 0
        for k, required in EXAMPLE_KEYS.items():
            if required and k not in ex:
                errs.append(SignatureError(f"example {i + 1} needs '{k}'", path, line))
        for k in ex:
            if k not in EXAMPLE_KEYS:
                errs.append(SignatureError(f"example {i + 1}: unknown key '{k}'", path, line))
        if ex.get("expect") not in ("match", "no-match"):
            errs.append(SignatureError(f"example {i + 1}: expect is 'match' or 'no-match'", path, line))
        examples.append(Example(
            name=str(ex.get("name", f"example {i + 1}")), expect=str(ex.get("expect")), log=str(ex.get("log", "")),
            initiating_rank=ex.get("initiating_rank"), step=ex.get("step"),
            source=str(ex.get("source", "example.log")), line=line,
        ))
    kinds = {e.expect for e in examples}
    if raw_examples and not {"match", "no-match"} <= kinds:
        err("needs at least one 'match' and one 'no-match' example", "examples")
    if errs:
        return None, errs
    sig = Signature(
        id=sid, title=data["title"], category=data["category"], severity=data["severity"],
        status=data["status"], revision=data.get("revision", 1), frameworks=tuple(data.get("frameworks", ())),
        retryable=data.get("retryable", False), benign=data.get("benign", False), role=data.get("role", "primary"),
        rank_evidence=data.get("rank_evidence", True), supersedes=tuple(data.get("supersedes", ())),
        tier=data.get("tier"),
        match=match, summary=diag["summary"], root_cause=diag["root_cause"], benign_when=diag["benign_when"],
        fix=diag["fix"], verify=diag["verify"], references=tuple(diag["references"]),
        related=tuple(diag.get("related", ())), mechanism=diag.get("mechanism", ""),
        confirm=tuple(diag.get("confirm", ())), prevention=diag.get("prevention", ""),
        symptoms=tuple(diag.get("symptoms", ())),
        description=data.get("description", ""), examples=tuple(examples), path=path,
    )
    return sig, []


_EXAMPLE_HEAD = re.compile(r"^[ \t]*(?:\[\[[ \t]*examples[ \t]*\]\]|examples[ \t]*=)", re.M)


def _example_lines(text: str) -> list[int]:
    """The line of each `[[examples]]` header (one `examples = [...]` for an inline array), in order."""
    out: list[int] = []
    line, at = 1, 0
    for m in _EXAMPLE_HEAD.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        out.append(line)
    return out
