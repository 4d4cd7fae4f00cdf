"""Rendering the committed evidence in docs/ gives the same bytes as when each snapshot was taken: the
report model and its renderers may be reorganised, their output may not drift unnoticed.

A deliberate change of a table regenerates the snapshots: `python tests/test_render_docs.py` from the repository
root writes them again from the current code (then read the diff before committing it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main

REPO = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).parent / "fixtures" / "rendered"
CASES = {
    "compare-ci.report.md": ["report", "docs/studies/compare/ci", "--format", "markdown"],
    "compare-ci.report.csv": ["report", "docs/studies/compare/ci", "--format", "csv"],
    "compare-ci.report.json": ["report", "docs/studies/compare/ci", "--format", "json"],
    "compare-ci.compare.md": ["compare", "docs/studies/compare/ci/base", "docs/studies/compare/ci/slower", "--no-rows",
                              "--markdown"],
    "ddoc5k.report.md": ["report", "docs/studies/engine-share/ddoc5k", "--format", "markdown"],
    "ddoc5k.report.csv": ["report", "docs/studies/engine-share/ddoc5k", "--format", "csv"],
    "decl5k.report.md": ["report", "docs/studies/engine-share/decl5k", "--format", "markdown"],
    "decl5k.report.json": ["report", "docs/studies/engine-share/decl5k", "--format", "json"],
    # a forecast folder alone: its report (report/forecast_report) as text
    "small50k.forecast.txt": ["report", "docs/studies/forecast/backtest32-small50k"],
}


def render(args: list[str]) -> str:
    cwd = os.getcwd()
    os.chdir(REPO)     # the snapshots name the folders as given, relative to the repository
    try:
        r = CliRunner().invoke(main, args)
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendering_the_committed_evidence_is_unchanged(name):
    assert render(CASES[name]) == (SNAPSHOTS / name).read_text(encoding="utf-8")


if __name__ == "__main__":
    for name, args in (CASES.items() if len(sys.argv) < 2 else ((n, CASES[n]) for n in sys.argv[1:])):
        (SNAPSHOTS / name).write_text(render(args), encoding="utf-8")
        print(f"wrote {SNAPSHOTS / name}")
