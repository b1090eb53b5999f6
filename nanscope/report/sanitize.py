"""Log text is untrusted: make it inert for each sink before it is written there."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(m: "re.Match[str]") -> str:
    c = m.group(0)
    if c == "\x1b":
        return "␛"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def terminal(text: str, max_len: int = 400) -> str:
    """No C0 (but tab), DEL, C1, ESC or bidi controls: rendered visibly instead."""
    text = _CONTROL.sub(_visible, text)
    if len(text) > max_len:
        text = text[: max_len - 1] + "…"
    return text


def xml(text: str) -> str:
    return _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100 else "\ufffd", text)
