"""The JSON Schema of the report, shipped with the package."""

from __future__ import annotations

import json
from importlib import resources


def report_schema() -> dict:
    return json.loads(resources.files(__package__).joinpath("report.v1.schema.json").read_text(encoding="utf-8"))
