"""TOML parsing: tomli's compiled build when it is installed, else the standard library's tomllib
(the same parser, pure Python). The signature library (119 files with their examples) is parsed at
every start: 45 ms with tomllib, 16 ms with tomli's mypyc wheel, a tenth of a small log's diagnosis."""

from __future__ import annotations

try:
    import tomli as _toml
except ImportError:  # (a platform without a tomli wheel and no tomli installed: the same results)
    import tomllib as _toml

loads = _toml.loads
TOMLDecodeError = _toml.TOMLDecodeError
