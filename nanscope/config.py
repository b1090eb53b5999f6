"""Settings for `nanscope diagnose`: flags > NANSCOPE_* environment > config file > defaults.

The config file is found as ruff finds its own: from the working directory up to the root, the
first folder holding `.nanscope.toml`, `nanscope.toml` (top-level keys) or a `pyproject.toml`
with a `[tool.nanscope]` table (a pyproject.toml without one is passed over). Paths in a file
(`signatures`, `baseline`) are relative to that file's folder; `output` paths are relative to the
working directory, as on the command line.

    [tool.nanscope]
    fail-on = "high"
    select = ["numerics", "distributed"]
    signatures = ["ci/nanscope-pack"]
    output = ["json:nanscope.json"]

An unknown key or a value of the wrong kind is an error that names the file and the line.
"""

from __future__ import annotations

import difflib
import os
import re
from nanscope import tomlfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from nanscope.errors import NanscopeError

FILE_NAMES = (".nanscope.toml", "nanscope.toml", "pyproject.toml")
SEVERITY_CHOICES = ("info", "low", "medium", "high", "critical", "never")
COLOR_CHOICES = ("auto", "always", "never")


@dataclass(frozen=True)
class Key:
    name: str  # the TOML key; the flag is --NAME, the variable NANSCOPE_NAME (upper, '_')
    kind: str  # str | bool | int | list | paths | path
    default: Any
    help: str
    choices: tuple = ()
    flag: str = ""  # the command-line flag when it is not --NAME

    @property
    def env(self) -> str:
        return "NANSCOPE_" + self.name.upper().replace("-", "_")


def _format_names() -> tuple:
    from nanscope.report import FORMATS

    return tuple(FORMATS)


KEYS: dict[str, Key] = {k.name: k for k in (
    Key("format", "str", "text", "report format on stdout (see `nanscope formats`)", choices=("@formats",)),
    Key("output", "list", [], "extra outputs, FORMAT[:PATH] (a PATH alone takes --format)"),
    Key("fail-on", "str", "medium", "lowest severity that makes the exit status non-zero", choices=SEVERITY_CHOICES),
    Key("exit-zero", "bool", False, "exit 0 even with findings"),
    Key("select", "list", [], "only these signature ids or categories"),
    Key("ignore", "list", [], "skip these signature ids or categories"),
    Key("signatures", "paths", [], "extra folders of signature TOML files"),
    Key("parser", "list", [], "force these parsers instead of all of them"),
    Key("color", "str", "auto", "colour the text report", choices=COLOR_CHOICES),
    Key("jobs", "int", None, "worker processes for several input files"),
    Key("engine", "str", None, "where files are scanned: local, dask or dask:ADDRESS (nanscope[dask])"),
    Key("baseline", "path", None, "a known-good run (JSON report or log)"),
    Key("redact", "bool", True, "mask tokens and keys in evidence lines", flag="--no-redact"),
)}


@dataclass
class Setting:
    value: Any
    source: str  # "default", "--fail-on", "NANSCOPE_FAIL_ON", "pyproject.toml:12"


@dataclass
class Config:
    settings: dict[str, Setting]
    file: Optional[Path] = None
    table: str = ""  # "tool.nanscope" for a pyproject.toml, "" for nanscope.toml
    env_used: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> Any:
        return self.settings[name].value

    def source(self, name: str) -> str:
        return self.settings[name].source


class ConfigError(NanscopeError):
    """A bad config file or variable: the message names the file and line (or the variable)."""


def find_config_file(start: Optional[Path] = None) -> Optional[Path]:
    """The nearest config file from `start` (the working directory) up to the root."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:  # the working directory was removed under us: no file applies
        return None
    for folder in (here, *here.parents):
        for name in FILE_NAMES:
            p = folder / name
            if not p.is_file():
                continue
            if name != "pyproject.toml" or _has_tool_table(p):
                return p
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        data = tomlfile.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomlfile.TOMLDecodeError):
        # a broken pyproject.toml that mentions the table is ours to report; one that doesn't is not
        try:
            return "[tool.nanscope]" in path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    return isinstance(data.get("tool"), dict) and "nanscope" in data["tool"]


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*=""")


def _key_lines(text: str, table: str) -> dict[str, int]:
    """Line numbers of the keys of one table (top level when table is ""), for error messages."""
    lines: dict[str, int] = {}
    current = ""
    for no, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            current = ".".join(part.strip().strip("\"'") for part in m.group(1).split("."))
            inner = current if not table else current[len(table) + 1:] if current.startswith(table + ".") else ""
            if inner:  # a sub-table ([tool.nanscope.x] or [x]) is a key of the table
                lines.setdefault(inner.split(".")[0], no)
            continue
        if current != table:
            continue
        k = _KEY.match(line)
        if k:
            lines.setdefault(next(g for g in k.groups() if g), no)
    return lines


def load_file(path: Path) -> tuple[dict[str, tuple[Any, int]], str]:
    """The file's nanscope settings as {key: (value, line)}, and the table they were in."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the config file: {e}") from None
    try:
        data = tomlfile.loads(text)
    except tomlfile.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+)", str(e))
        where = f"{path}:{m.group(1)}" if m else str(path)
        raise ConfigError(f"{where}: invalid TOML: {str(e).split(' (at line')[0]}") from None
    table = "tool.nanscope" if path.name == "pyproject.toml" else ""
    if table:
        data = data.get("tool", {}).get("nanscope", {})
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: [tool.nanscope] must be a table")
    lines = _key_lines(text, table)
    out: dict[str, tuple[Any, int]] = {}
    for name, value in data.items():
        line = lines.get(name, 0)
        where = f"{path}:{line}" if line else str(path)
        if name not in KEYS:
            close = difflib.get_close_matches(name.replace("_", "-"), list(KEYS), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            section = f" in [{table}]" if table else ""
            raise ConfigError(f"{where}: unknown key '{name}'{section}{hint}; known keys: {', '.join(KEYS)}")
        out[name] = (_check(KEYS[name], value, where, path.parent), line)
    return out, table


def _check(key: Key, value: Any, where: str, base: Optional[Path]) -> Any:
    """Validate a value from a file (already typed by TOML); relative paths join `base`."""
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"{where}: '{key.name}' takes {expected}, not {value!r}")

    if key.kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if key.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad("a whole number of at least 1")
        return value
    if key.kind == "str":
        if not isinstance(value, str):
            raise bad("a string")
        choices = _choices(key)
        if choices and value not in choices:
            raise bad("one of " + ", ".join(choices))
        return value
    if key.kind == "path":
        if not isinstance(value, str) or not value:
            raise bad("a path (a string)")
        return _join(base, value)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad("a list of strings")
    if key.kind == "paths":
        return [_join(base, v) for v in value]
    return list(value)


def _choices(key: Key) -> tuple:
    return _format_names() if key.choices == ("@formats",) else key.choices


def _join(base: Optional[Path], value: str) -> str:
    if base is None or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(base, value))


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _from_env(key: Key, raw: str) -> Any:
    where = f"environment variable {key.env}"
    if key.kind == "bool":
        low = raw.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConfigError(f"{where}: takes 1/0, true/false, yes/no, not {raw!r}")
    if key.kind == "int":
        try:
            return _check(key, int(raw), where, None)
        except ValueError:
            raise ConfigError(f"{where}: takes a whole number, not {raw!r}") from None
    if key.kind in ("list", "paths"):
        return [x.strip() for x in raw.split(",") if x.strip()]
    return _check(key, raw, where, None)


def resolve(flags: Optional[Mapping[str, Any]] = None, env: Optional[Mapping[str, str]] = None,
            cwd: Optional[Path] = None, config_file: Optional[str] = None) -> Config:
    """Every setting with its value and where it came from.

    flags: the settings given on the command line ({key: value}, only those given);
    env: the environment (os.environ); config_file: an explicit file (--config), else it is searched for.
    """
    flags = dict(flags or {})
    env = os.environ if env is None else env
    path: Optional[Path]
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"--config {config_file}: no such file")
    else:
        path = find_config_file(cwd)
    file_values, table = load_file(path) if path else ({}, "")
    shown = _shown(path, cwd)
    settings: dict[str, Setting] = {}
    used: list[str] = []
    for name, key in KEYS.items():
        if name in flags:
            settings[name] = Setting(flags[name], key.flag or f"--{name}")
        elif env.get(key.env) is not None:
            settings[name] = Setting(_from_env(key, env[key.env]), key.env)
            used.append(key.env)
        elif name in file_values:
            value, line = file_values[name]
            settings[name] = Setting(value, f"{shown}:{line}" if line else shown)
        else:
            default = key.default
            settings[name] = Setting(list(default) if isinstance(default, list) else default, "default")
    return Config(settings, path, table, used)


def _shown(path: Optional[Path], cwd: Optional[Path]) -> str:
    if path is None:
        return ""
    try:
        return os.path.relpath(path, cwd or Path.cwd())
    except (ValueError, OSError):
        return str(path)


def _toml_value(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, Sequence):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def describe(config: Config) -> str:
    """`nanscope config`: the resolved settings, one a line, each with where it came from."""
    if config.file is not None:
        where = f"{_shown(config.file, None)}" + (f" [{config.table}]" if config.table else "")
        head = f"# config file: {where}\n"
    else:
        head = "# config file: none found (looked for " + ", ".join(FILE_NAMES[1:]) + " [tool.nanscope] from here up)\n"
    rows = [(name, _toml_value(s.value), s.source) for name, s in config.settings.items()]
    w1 = max(len(r[0]) for r in rows)
    w2 = min(40, max(len(r[1]) for r in rows))
    body = "".join(f"{n:<{w1}} = {v:<{w2}}  # {src}\n" for n, v, src in rows)
    return head + body
