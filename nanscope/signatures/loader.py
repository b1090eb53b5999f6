"""Find and load signature files: the bundled library plus any --signatures folders."""

from __future__ import annotations

import os
import re
from nanscope import tomlfile
from pathlib import Path
from typing import Iterable, Optional

from nanscope.errors import SignatureError
from nanscope.signatures.schema import Signature, build


def bundled_dir() -> Path:
    """The library shipped with nanscope: inside the wheel, or the repo's signatures/ folder."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_signatures"
    if packaged.is_dir():
        return packaged
    return here.parent / "signatures"


def is_bundled_pack(folder: Path) -> bool:
    """Whether a --signatures / `signatures test` folder is the bundled library itself: the same
    folder, or the signatures/ folder of a nanscope checkout (whose installed copy is bundled_dir()).
    Such a folder is loaded in place of the bundled copy, so the checkout's edits are what runs."""
    try:
        folder = folder.resolve()
        if folder == bundled_dir().resolve():
            return True
        project = folder.parent / "pyproject.toml"
        if folder.name != "signatures" or not project.is_file() or not (folder.parent / "nanscope").is_dir():
            return False
        data = tomlfile.loads(project.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomlfile.TOMLDecodeError):
        return False
    return data.get("project", {}).get("name") == "nanscope"


def bundled_pack_root(path: Path) -> Optional[Path]:
    """The bundled library `path` is (or is a file or sub-folder of), or None."""
    try:
        path = path.resolve()
    except OSError:
        return None
    for candidate in (path, *path.parents):
        if candidate.is_dir() and is_bundled_pack(candidate):
            return candidate
    return None


def signature_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise SignatureError("no such signature file or folder", str(root))
    return sorted(p for p in root.rglob("*.toml") if not p.name.startswith("."))


def load_file(path: Path) -> tuple[Optional[Signature], list[SignatureError]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return None, [SignatureError(f"cannot read: {e}", str(path))]
    try:
        data = tomlfile.loads(text)
    except tomlfile.TOMLDecodeError as e:
        line = getattr(e, "lineno", None)
        m = re.search(r"\(at line (\d+)", str(e))
        if line is None and m:
            line = int(m.group(1))
        msg = str(e).split(" (at line")[0]
        return None, [SignatureError(f"invalid TOML: {msg}", str(path), line)]
    return build(data, str(path), text)


def load(extra_dirs: Iterable[str] = (), bundled: bool = True) -> tuple[list[Signature], list[SignatureError]]:
    """All signatures, and every problem found. Ids must be unique across all folders; a folder
    that is the bundled library (is_bundled_pack) replaces the bundled copy instead of repeating it."""
    extra: list[Path] = []
    replacement: Optional[Path] = None
    for d in map(Path, extra_dirs):
        pack = bundled_pack_root(d)
        if pack is None:
            extra.append(d)
        elif replacement is None:
            replacement = pack  # its files, d's among them, are loaded once, as the bundled library
    if replacement is not None:
        roots = [replacement] + extra
    else:
        roots = ([bundled_dir()] if bundled else []) + extra
    sigs: list[Signature] = []
    errors: list[SignatureError] = []
    seen: dict[str, str] = {}
    for root in roots:
        try:
            files = signature_files(root)
        except SignatureError as e:
            errors.append(e)
            continue
        for f in files:
            sig, errs = load_file(f)
            errors.extend(errs)
            if sig is None:
                continue
            if sig.id in seen:
                errors.append(SignatureError(f"id '{sig.id}' is already used by {seen[sig.id]}", sig.path, 1))
                continue
            seen[sig.id] = sig.path
            sigs.append(sig)
    known = set(seen)
    for s in sigs:
        for ref in s.supersedes:
            if ref not in known:
                errors.append(SignatureError(f"supersedes unknown signature '{ref}'", s.path))
    return sigs, errors


def load_or_raise(extra_dirs: Iterable[str] = ()) -> list[Signature]:
    sigs, errors = load(extra_dirs)
    if errors:
        raise errors[0] if len(errors) == 1 else SignatureError(
            f"{len(errors)} problems in signature files:\n  " + "\n  ".join(str(e) for e in errors)
        )
    return sigs


def rel(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path
