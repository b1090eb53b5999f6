"""Log text is untrusted: make it inert for each sink before it is written there."""

from __future__ import annotations

import re

# C0 (but tab and newline), DEL, C1, line/paragraph separators, bidi embeddings / overrides /
# isolates, and the invisible marks that reorder or hide text: zero-width space / joiners (U+200B-D),
# LRM / RLM (U+200E-F), the Arabic letter mark (U+061C), word joiner and invisible operators
# (U+2060-4) and the BOM / zero-width no-break space (U+FEFF).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Inside a JSON document the same characters are written as \\uXXXX escapes: the same string to a
# parser, inert on a terminal that shows the file (they can only occur inside JSON strings).
_JSON_RAW = re.compile(r"[\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


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


def json_text(dumped: str) -> str:
    """A json.dumps(ensure_ascii=False) result with the invisible and C1 characters escaped."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumped)


def xml(text: str) -> str:
    text = _XML_ILLEGAL.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100 else "\ufffd", text)
    return _JSON_RAW.sub(_visible, text)


def html_text(text: str, max_len: int = 2000) -> str:
    """Text for an HTML page: control and invisible characters visible (as on the terminal), then
    every character HTML gives a meaning escaped (also in attribute values)."""
    from html import escape

    return escape(terminal(text, max_len), quote=True)


# --- GitHub Actions runner (actions/toolkit packages/core/src/command.ts; actions/runner ActionCommand.cs)

def gh_data(text: str) -> str:
    """A workflow command's message: toolkit escapeData (% first, then CR and LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: str) -> str:
    """A workflow command's property value: toolkit escapeProperty (escapeData plus ':' and ',')."""
    return gh_data(text).replace(":", "%3A").replace(",", "%2C")


def gh_defuse(text: str) -> str:
    """The runner matches the legacy `##[command]` form anywhere in a line: break every one."""
    return text.replace("##[", "## [")


# --- Markdown (GitHub-flavoured: PR comments, $GITHUB_STEP_SUMMARY)

_BACKTICKS = re.compile(r"`+")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_fence(text: str, info: str = "text") -> str:
    """`text` as a fenced code block: no Markdown or HTML inside one is interpreted, and the fence
    is longer than any backtick run in the text, so no line of it can close the block early."""
    text = terminal(text, max_len=len(text) + 1)
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}\n"


def md_inline(text: str) -> str:
    """Short text outside a code block (titles, fixes): Markdown punctuation and HTML made literal."""
    text = " ".join(terminal(text, max_len=len(text) + 1).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)
