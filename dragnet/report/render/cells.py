"""The report's view-file and design-doc tables as text: their columns, cells and the lines under them, shared by
the terminal, Markdown and the HTML page (the numbers are report.tables' groups)."""

from __future__ import annotations

from typing import Sequence

from dragnet.report import columns
from dragnet.report.columns import classes_text
from dragnet.report.tables import RANKING_TEST, DesignGroup, Group, design_ranking, ranking


# the columns are report.columns' declarations (GROUP, DESIGN); the names below are kept for their callers
COLUMNS = columns.headers(columns.GROUP)


def table_rows(groups: Sequence[Group]) -> list[list[str]]:
    """The table's cells as text (shared by the terminal table, Markdown and the HTML page)."""
    return columns.text_rows(columns.GROUP, groups)


def table_values(groups: Sequence[Group]) -> list[list[float | None]]:
    """The numbers behind table_rows' cells, column for column (None for a text cell): what the HTML page
    links and sorts by, so it never reads the text back."""
    return columns.value_rows(columns.GROUP, groups)


def ranking_lines(groups: Sequence[Group]) -> list[str]:
    rankings = ranking(groups)
    if not rankings:
        return []
    return [f"ranking ({RANKING_TEST}; > separated, ≈ tied, ? unresolved):"] + [
        line for r in rankings for line in r.lines()]


# ---------------------------------------------------------------- design documents

def design_ranking_lines(groups: Sequence[DesignGroup]) -> list[str]:
    rankings = design_ranking(groups)
    if not rankings:
        return []
    return [f"engines ({RANKING_TEST}; > separated, ≈ tied, ? unresolved):"] + [
        line for _, r in rankings for line in r.lines()]


def design_notes(groups: Sequence[DesignGroup]) -> list[str]:
    """Differences, notes and failures worth a line under the table."""
    out = []
    for g in groups:
        where = f"{g.ddoc} {g.view} {g.label} ({g.storage})"
        if g.differences:
            out.append(f"differences: {where}: {g.differences} rows differ from {g.reference}'s "
                       f"over {g.compared} compared runs" + (f"; by class, with those between its own builds: "
                                                              f"{classes_text(g.classes)}" if g.classes else ""))
        out += [f"note: {where}: {n}" for n in g.notes]
        out += [f"failed: {where}: {e}" for e in g.errors]
    return out


DESIGN_COLUMNS = columns.headers(columns.DESIGN)


def design_table_rows(groups: Sequence[DesignGroup]) -> list[list[str]]:
    return columns.text_rows(columns.DESIGN, groups)


def design_table_values(groups: Sequence[DesignGroup]) -> list[list[float | None]]:
    """The numbers behind design_table_rows' cells, column for column (None for a text cell)."""
    return columns.value_rows(columns.DESIGN, groups)


DESIGN_LEGEND = ("* reference engine (rows of the others are compared with its first run); × ref: docs/s over "
                 "the reference's run of the same repeat; lag s: --update freshness lag")
