"""The generated pages of the docs site, and the mkdocs hook that adds them to a build.

    python tools/docs_pages.py OUT_DIR     # write the generated pages as files (to look at them)
    mkdocs build --strict                  # mkdocs.yml names this file in `hooks:`

Generated, never hand-edited (so they cannot drift from the code):
- signatures/index.md and signatures/<category>/<id>.md: one page per signature TOML, as ruff's
  rule pages (what it is, why it happens, symptoms, when benign, how to confirm, fix, prevention,
  verify, what it looks like in a log and what does not match, references, the [match] table);
- schema.md and schema/report.v1.schema.json: the JSON report's schema, its fields, the file;
- the reference part of api.md (the `<!-- nanscope:api-reference -->` marker): the functions of
  nanscope.api with their signatures and docstrings, and the fields of the records they return.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

API_MARKER = "<!-- nanscope:api-reference -->"
_MD_SPECIAL = re.compile(r"([\\*_\[\]<>#|])")


def md_text(text: str) -> str:
    """Prose from a TOML file as Markdown: code spans (`...`) kept, everything else escaped so a
    `<logs>`, a `*` or an `_` in the text is shown as written."""
    parts = " ".join(text.split()).split("`")
    if len(parts) % 2 == 0:  # an unbalanced backtick: escape it too
        parts = [" ".join(text.split()).replace("`", "\\`")]
    return "`".join(p if i % 2 else _MD_SPECIAL.sub(r"\\\1", p) for i, p in enumerate(parts))


def fence(body: str, lang: str = "") -> str:
    """A fenced block longer than any backtick run in the body."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body.rstrip()}\n{ticks}\n"


def load_signatures() -> list:
    """The repository's signatures/ folder (what the docs document), every file checked."""
    from nanscope.signatures.loader import load

    sigs, errors = load([str(ROOT / "signatures")], bundled=False)
    if errors:
        raise SystemExit("signature files have problems:\n" + "\n".join(str(e) for e in errors))
    return sorted(sigs, key=lambda s: (s.category, s.id))


def signature_path(sig: Any) -> str:
    return f"signatures/{sig.category}/{sig.id}.md"


def _toml_table(match: dict) -> str:
    lines = ["[match]"]
    for k, v in match.items():
        lines.append(f"{k} = {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines)


def signature_page(sig: Any, by_id: dict) -> str:
    """One signature as a page: the sections of `nanscope explain`, with the examples."""
    out = [f"# {sig.id}\n", f"**{md_text(sig.title)}**\n"]
    facts = [f"severity **{sig.severity}**", f"category **{sig.category}**", f"status {sig.status}",
             f"revision {sig.revision}", "retryable" if sig.retryable else "not retryable"]
    if sig.benign:
        facts.append("benign")
    out.append(" · ".join(facts) + "\n")
    if sig.frameworks:
        out.append("Frameworks: " + ", ".join(f"`{f}`" for f in sig.frameworks) + "\n")

    def section(title: str, body: str) -> None:
        if body and body.strip():
            out.append(f"## {title}\n\n{md_text(body)}\n")

    section("What it is", sig.description or sig.title)
    section("Why it happens", sig.mechanism or sig.root_cause)
    if sig.mechanism and sig.root_cause:
        section("Root cause", sig.root_cause)
    if sig.symptoms:
        out.append("## Symptoms\n\n" + "".join(f"- {md_text(x)}\n" for x in sig.symptoms))
    section("When it is benign", sig.benign_when)
    if sig.confirm:
        out.append("## How to confirm\n\n" + "".join(f"- [ ] {md_text(x)}\n" for x in sig.confirm))
    section("Fix", sig.fix)
    section("Prevention", sig.prevention)
    section("Verify the fix", sig.verify)
    out.append("Words in braces (`{rank}`, `{step}`) are filled in from the log in a report.\n")
    matches = [e for e in sig.examples if e.expect == "match"]
    misses = [e for e in sig.examples if e.expect != "match"]
    if matches:
        out.append("## What it looks like in a log\n")
        for e in matches:
            extra = []
            if e.initiating_rank is not None:
                extra.append(f"initiating rank {e.initiating_rank}")
            if e.step is not None:
                extra.append(f"step {e.step}")
            out.append(f"*{md_text(e.name)}*" + (f" ({', '.join(extra)})" if extra else "") + "\n")
            out.append(fence(e.log.strip("\n"), "text"))
    if misses:
        out.append("## What does not match\n")
        for e in misses:
            out.append(f"*{md_text(e.name)}*\n")
            out.append(fence(e.log.strip("\n"), "text"))
    if sig.related:
        links = []
        for r in sig.related:
            other = by_id.get(r)
            links.append(f"[{r}](../{other.category}/{r}.md)" if other else f"`{r}`")
        out.append("## Related\n\n" + ", ".join(links) + "\n")
    if sig.references:
        out.append("## References\n\n" + "".join(f"- {_reference(r)}\n" for r in sig.references))
    out.append("## How it matches\n\n"
               f"The `{sig.match['machine']}` machine ([signature packs](../../signature-packs.md)):\n\n"
               + fence(_toml_table(sig.match), "toml"))
    out.append(f"\n`nanscope explain {sig.id}` prints this page offline; "
               f"`nanscope signatures show {sig.id}` prints the TOML file.\n")
    return "\n".join(out)


def _reference(ref: str) -> str:
    if re.match(r"^https?://\S+$", ref):
        return f"<{ref}>"
    return md_text(ref)


def signatures_index(sigs: Iterable[Any]) -> str:
    sigs = list(sigs)
    out = ["# Signatures\n",
           f"nanscope knows {len(sigs)} failures. Each is one TOML file in `signatures/<category>/` "
           "(data, not code: see [signature packs](../signature-packs.md) to write your own); "
           "`nanscope explain ID` prints any of these pages offline.\n"]
    for category in sorted({s.category for s in sigs}):
        out.append(f"## {category}\n\n| id | severity | what |\n|---|---|---|")
        for s in (s for s in sigs if s.category == category):
            out.append(f"| [{s.id}]({s.category}/{s.id}.md) | {s.severity} | {md_text(s.title)} |")
        out.append("")
    return "\n".join(out)


def _type(spec: dict) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{spec['const']}`"
    t = spec.get("type", "")
    if isinstance(t, list):
        return " or ".join(t)
    if t == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type(spec['items'])}"
    return t or "any"


def _fields_table(schema: dict) -> str:
    req = set(schema.get("required", []))
    rows = ["| field | type | required | notes |", "|---|---|---|---|"]
    for name, spec in schema.get("properties", {}).items():
        rows.append(f"| `{name}` | {_type(spec)} | {'yes' if name in req else ''} | {md_text(spec.get('description', ''))} |")
    return "\n".join(rows) + "\n"


def schema_page(schema: dict) -> str:
    out = ["# The JSON report\n",
           "`nanscope diagnose --format json` (or `--output json:FILE`) writes one JSON object, "
           "versioned by `schema_version`. " + md_text(schema.get("description", "")) + "\n",
           "`nanscope schema` prints the JSON Schema (draft 2020-12); the file is also "
           "[here](schema/report.v1.schema.json).\n",
           "## Top level\n", _fields_table(schema)]
    for name, spec in schema.get("$defs", {}).items():
        if spec.get("type") == "object" and spec.get("properties"):
            out += [f"## `{name}`\n", _fields_table(spec)]
    for name, spec in schema.get("properties", {}).items():
        items = spec.get("items") if spec.get("type") == "array" else spec
        if isinstance(items, dict) and items.get("type") == "object" and items.get("properties"):
            out += [f"## `{name}`" + (" (each item)" if items is not spec else "") + "\n", _fields_table(items)]
    out += ["## The whole schema\n", fence(json.dumps(schema, indent=2), "json")]
    return "\n".join(out)


def api_reference() -> str:
    """The functions of nanscope.api (its __all__) and the fields of the records they return."""
    from nanscope import api, model

    out = ["## Reference\n"]
    for name in api.__all__:
        obj = getattr(api, name)
        if dataclasses.is_dataclass(obj):
            continue
        sig = str(inspect.signature(obj)).replace("'", "")
        out.append(f"### `{name}`\n\n" + fence(f"{name}{sig}", "python") + "\n" + md_text(inspect.getdoc(obj) or "") + "\n")
    for cls in (api.Options, model.Report, model.Finding, model.Evidence, model.RankSummary, model.InputInfo,
                model.Diagnostic):
        out.append(f"### `{cls.__name__}`\n\n{md_text(inspect.getdoc(cls) or '')}\n\n| field | type |\n|---|---|")
        for f in dataclasses.fields(cls):
            if f.repr is False and f.name in ("matches", "sig"):
                continue
            t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            out.append(f"| `{f.name}` | `{t}` |")
        out.append("")
    return "\n".join(out)


def generated_pages() -> dict[str, str]:
    """Every generated page: path in the site -> content."""
    from nanscope.schema import report_schema

    sigs = load_signatures()
    by_id = {s.id: s for s in sigs}
    pages = {"signatures/index.md": signatures_index(sigs)}
    for s in sigs:
        pages[signature_path(s)] = signature_page(s, by_id)
    schema = report_schema()
    pages["schema.md"] = schema_page(schema)
    pages["schema/report.v1.schema.json"] = json.dumps(schema, indent=2) + "\n"
    return pages


def signature_nav() -> list:
    sigs = load_signatures()
    nav: list = ["signatures/index.md"]
    for category in sorted({s.category for s in sigs}):
        nav.append({category: [signature_path(s) for s in sigs if s.category == category]})
    return nav


# --- the mkdocs hook (mkdocs.yml: hooks: [tools/docs_pages.py]) ---------------------------------

def on_config(config: Any) -> Any:
    """The nav's "Signatures" entry becomes one section per category."""
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and "Signatures" in item:
            config.nav[i] = {"Signatures": signature_nav()}
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in generated_pages().items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    return markdown


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out = Path(argv[0])
    pages = generated_pages()
    for path, content in pages.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8").replace(API_MARKER, api_reference())
    (out / "api.md").write_text(api, encoding="utf-8")
    print(f"{len(pages) + 1} pages written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
