"""The report's output formats as a registry: one record per format, the command's `--format` choices read
from it. A new format is one module that calls register() with its record (tests/test_formats.py adds one);
the built-in ones are console (table), Markdown, CSV and JSON, each a module of report/render/ that formats
the one report model (report.model.Report)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dragnet.report.model import Report


@dataclass(frozen=True)
class Format:
    """name:  the `--format` value
    text:  the report as text (None: the format prints itself, as the rich console does)
    data:  the report as JSON-ready data, for a format whose output the command may add to (charts, page)"""

    name: str
    text: Callable[[Report], str | None] | None = None
    data: Callable[[Report], dict] | None = None


def _table(rep: Report) -> None:
    from dragnet.report.render import console

    console.show(rep)


def _markdown(rep: Report) -> str:
    from dragnet.report.render import markdown

    return markdown.render(rep)


def _csv(rep: Report) -> str:
    from dragnet.report.render import csv

    return csv.render(rep)


def _json(rep: Report) -> dict:
    from dragnet.report.render import json

    return json.render(rep)


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("table", text=_table),
    Format("markdown", text=_markdown),
    Format("csv", text=_csv),
    Format("json", data=_json),
)}
_BUILTIN = frozenset(FORMATS)


def register(fmt: Format) -> None:
    """Adds a format for this process; a built-in one cannot be replaced."""
    if fmt.name in _BUILTIN:
        raise ValueError(f"format {fmt.name!r} is a built-in one")
    if (fmt.text is None) == (fmt.data is None):
        raise ValueError(f"format {fmt.name!r}: give text or data, one of them")
    FORMATS[fmt.name] = fmt


def unregister(name: str) -> None:
    if name not in _BUILTIN:
        FORMATS.pop(name, None)


def names() -> list[str]:
    return list(FORMATS)


def get(name: str) -> Format:
    return FORMATS[name]


def render(rep: Report, name: str) -> Any:
    """The report in format `name`: its text (None when the format printed it) or its data."""
    fmt = get(name)
    return fmt.data(rep) if fmt.data is not None else fmt.text(rep)
