"""Secrets never reach a report: tokens that ML logs really contain are masked in evidence.

Shapes follow gitleaks / trufflehog rules: Hugging Face `hf_...` and `api_org_...`, W&B v1 (40 hex
next to 'wandb') and v2 (`wandb_v1_...`), AWS access key ids, GitHub tokens, and the values of
`*_TOKEN=` / `*_KEY=` / `*_SECRET=` / `*PASSWORD=` (AWS secret access keys too) / `Authorization:` /
`--token`, bare `sk-...` keys, PEM private key bodies and passwords in URLs. Documented placeholders
(`AKIAIOSFODNN7EXAMPLE`, `hf_xxxx...`) are left alone.
"""

from __future__ import annotations

import re

_PATTERNS = [
    re.compile(r"\b(hf_[A-Za-z0-9]{30,40})\b"),
    re.compile(r"\b(api_org_[A-Za-z0-9]{30,40})\b"),
    re.compile(r"\b(wandb_v1_[A-Za-z0-9]{20,40}_[A-Za-z0-9]{40,60})\b"),
    re.compile(r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})\b"),
    re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,255})\b"),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"(?<![\w\-])(sk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,})"),
    # the body of a PEM private key (one line: a message or a JSON value with \n escapes)
    re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:\\n|\s)*([A-Za-z0-9+/=\\\s]{16,}?)(?=-----END|$)"),
    # a password in a URL: scheme://user:password@host
    re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@]+:([^\s/@]{3,})@"),
    re.compile(r"(?i)\bauthorization:\s*(?:bearer|token|basic)?\s*([^\s'\"]{8,})"),
    # NAME=value, NAME: value, "name": "value" where NAME holds token / key / secret / password
    # (HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY, SECRET_KEY, ENCRYPTION_KEY, PRIVATE_KEY)
    re.compile(r"(?i)\b([\w\-]*(?:token|key|secret|password|passwd)[\w\-]*)['\"]?\s*[=:]\s*['\"]?([^\s'\",;}]{12,})"),
    re.compile(r"(?i)--(?:token|api[_-]key|password|secret)[= ]\s*['\"]?([^\s'\"]{8,})"),
]
_WANDB_HEX = re.compile(r"\b([0-9a-f]{40})\b")  # a W&B v1 key: 40 hex on a line that mentions wandb
_GENERIC = _PATTERNS[-2]
_PLACEHOLDER = re.compile(r"(?i)example|x{6,}|\*{4,}|<[^>]*>|\[REDACTED|your[_-]?token|\$\{?\w+\}?$")
_HINT = re.compile(r"(?i)hf_|api_org_|wandb|AKIA|ASIA|ABIA|ACCA|A3T|gh[pousr]_|authorization|token|key|secret|passw|sk-|://[^\s/]*@")
# Names whose value is a secret even when it holds a '/' (AWS secret access keys are base64).
_SURELY_SECRET = re.compile(r"(?i)secret|private|passw")
# After a bare `key`, lowercase words joined by '_' (a counter after ':') name a key, not a secret:
# c10d's `for key: store_based_barrier_key:32`, a dict's `key: model_state_dict`.
_KEY_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?::\d+)?")


def _mask(secret: str) -> str:
    head = secret[:3] if len(secret) > 12 else ""
    return f"{head}…[REDACTED len={len(secret)}]"


def _looks_secret(value: str, name: str = "") -> bool:
    """A value after `token=`/`secret:` is masked only if it looks like a key (letters and digits),
    so `max_tokens: 4096`, `tokenizer: meta-llama/Llama-2-7b` or a file path stays readable. A
    value named secret / private / password may hold '/' (base64), unless it is a path."""
    if value.startswith("[REDACTED") or not (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)):
        return False
    if name.lower() == "key" and _KEY_NAME.fullmatch(value):
        return False
    if "/" in value:
        return bool(_SURELY_SECRET.search(name)) and not value.startswith(("/", ".", "~")) and "://" not in value
    return True


def redact(text: str) -> str:
    if not _HINT.search(text):
        return text
    for rx in _PATTERNS:
        def sub(m: "re.Match[str]") -> str:
            g = m.lastindex or 1
            secret = m.group(g)
            if _PLACEHOLDER.search(secret) or "REDACTED" in secret:
                return m.group(0)
            if rx is _GENERIC and not _looks_secret(secret, m.group(1)):
                return m.group(0)
            s, e = m.span(g)
            return m.group(0)[: s - m.start()] + _mask(secret) + m.group(0)[e - m.start():]

        text = rx.sub(sub, text)
    if "wandb" in text.lower():
        text = _WANDB_HEX.sub(lambda m: _mask(m.group(1)), text)
    return text
