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


class _Cache:
    """The bundled library as built, kept between runs: parsing its TOML (1 MB with the examples)
    and building it cost ~55 ms at every start, a pickle of the result ~4 ms. The key is the
    nanscope version and every file's path, size and modification time, so an edited file is
    read anew. The cache lives in NANSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/nanscope, else
    ~/.cache/nanscope (NANSCOPE_CACHE_DIR= turns it off); it is read only when this user owns
    it and nobody else may write it, and any problem with it means a plain load."""

    def __init__(self, files: list[Path]):
        self.path: Optional[Path] = None
        self.n = len(files)
        env = os.environ.get("NANSCOPE_CACHE_DIR")
        if env == "":
            return
        try:
            import hashlib

            from nanscope import __version__

            h = hashlib.sha256(__version__.encode())
            for f in files:
                st = f.stat()
                h.update(f"\0{f}\0{st.st_size}\0{st.st_mtime_ns}".encode())
            base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nanscope"
            self.path = base / f"signatures-{h.hexdigest()[:24]}.pickle"
        except (OSError, RuntimeError, ValueError):
            self.path = None

    def get(self) -> Optional[list]:
        import pickle

        if self.path is None:
            return None
        try:
            st = self.path.stat()
            if (hasattr(os, "getuid") and st.st_uid != os.getuid()) or st.st_mode & 0o022:
                return None
            got = pickle.loads(self.path.read_bytes())
        except Exception:  # (absent, unreadable, from another Python: load as if there were none)
            return None
        ok = isinstance(got, list) and len(got) == self.n and all(isinstance(s, Signature) for s in got)
        return got if ok else None

    def put(self, sigs: list) -> None:
        import pickle
        import tempfile

        if self.path is None or any(s is None for s in sigs):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            for old in self.path.parent.glob("signatures-*.pickle"):
                if old != self.path:
                    old.unlink(missing_ok=True)  # (an older library's: one at a time)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".signatures-")
            with os.fdopen(fd, "wb") as out:
                out.write(pickle.dumps(sigs, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, self.path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            pass


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
        cache = _Cache(files) if root == replacement or (replacement is None and bundled and root is roots[0]) else None
        built = cache.get() if cache is not None else None
        loaded = []
        for f, sig in zip(files, built) if built is not None else ((f, None) for f in files):
            if sig is None:
                sig, errs = load_file(f)
                errors.extend(errs)
                if errs:
                    cache = None  # (a library with problems is read anew every time)
                loaded.append(sig)
            if sig is None:
                continue
            if sig.id in seen:
                errors.append(SignatureError(f"id '{sig.id}' is already used by {seen[sig.id]}", sig.path, 1))
                continue
            seen[sig.id] = sig.path
            sigs.append(sig)
        if cache is not None and built is None:
            cache.put(loaded)
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
