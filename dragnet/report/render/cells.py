"""The report's view-file and design-doc tables as text: their columns, cells and the lines under them, shared by
the terminal, Markdown and the HTML page (the numbers are report.tables' groups)."""

from __future__ import annotations

from typing import Sequence

from dragnet.report.tables import RANKING_TEST, DesignGroup, Group, design_ranking, ranking


# all-tasks / one-task c/s, total and wall time are medians over the runs; σ and min…max are of wall time;
# × base: docs/s relative to the Erlang baseline; CPU % is the mean, MB the peak RSS of the process family
COLUMNS = ("language", "storage", "runs", "all c/s", "one c/s", "total s", "wall s", "wall σ", "wall min…max",
           "docs/s", "× base", "beam CPU %", "beam MB", "QS", "QS CPU %", "QS MB")


def _f(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def table_rows(groups: Sequence[Group]) -> list[list[str]]:
    """The table's cells as text (shared by the terminal table and markdown)."""
    rows = []
    for g in groups:
        runs = str(g.n) + (f" ({g.failed} failed)" if g.failed else "")
        m = lambda s, d=1: _f(s.median if s else None, d)  # noqa: E731
        rows.append([
            g.label, g.storage, runs, m(g.all_cps), m(g.one_cps), m(g.total_s), m(g.wall_s, 2),
            # a single run has no measured spread
            "–" if g.wall_s is None or g.wall_s.n < 2 else f"{g.wall_s.stdev:.2f}",
            "–" if g.wall_s is None or g.wall_s.n < 2 else f"{g.wall_s.min:.2f}…{g.wall_s.max:.2f}",
            m(g.docs_per_s), "–" if g.ratio is None else f"{g.ratio.median:.2f}",
            _f(g.beam_cpu), _f(g.beam_rss_mb, 0), g.qs_family or ("(in beam)" if g.n else "–"),
            _f(g.qs_cpu), _f(g.qs_rss_mb, 0),
        ])
    return rows


def ranking_lines(groups: Sequence[Group]) -> list[str]:
    rankings = ranking(groups)
    if not rankings:
        return []
    return [f"ranking ({RANKING_TEST}; > separated, ≈ tied, ? unresolved):"] + [
        line for r in rankings for line in r.lines()]


# ---------------------------------------------------------------- design documents

def classes_text(classes: dict[str, int]) -> str:
    """'2 order-dependent reduce, 1 engine' (what the differences column adds to the count)."""
    return ", ".join(f"{n:,} {c}" for c, n in sorted(classes.items(), key=lambda kv: -kv[1]) if n)


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


DESIGN_COLUMNS = ("design doc", "view", "engine", "storage", "runs", "total s", "wall s", "wall min…max", "docs/s",
                  "× ref", "rows compared", "differences", "lag s", "incr docs/s", "beam CPU %", "beam MB", "QS",
                  "QS CPU %", "QS MB")


def design_table_rows(groups: Sequence[DesignGroup]) -> list[list[str]]:
    rows = []
    # views whose rows were compared at all (addview --per-view builds compare nothing)
    compared_views = {(g.ddoc, g.view) for g in groups if g.compared}
    for g in groups:
        m = lambda s, d=1: _f(s.median if s else None, d)  # noqa: E731
        if g.is_reference and not g.compared and (g.ddoc, g.view) in compared_views:
            diffs = "(reference)"
        elif g.differences is None:
            diffs = "not compared"
        else:
            diffs = f"{g.differences:,}" + (" (reference repeats)" if g.is_reference else "")
        if g.repeat_differences:
            diffs += f" + {g.repeat_differences:,} between its own builds"
        if g.classes:
            diffs += f": {classes_text(g.classes)}"
        rows.append([
            g.ddoc, g.view, g.label + (" *" if g.is_reference else ""), g.storage,
            str(g.n) + (f" ({g.failed} failed)" if g.failed else ""),
            m(g.total_s), m(g.wall_s, 2),
            "–" if g.wall_s is None or g.wall_s.n < 2 else f"{g.wall_s.min:.2f}…{g.wall_s.max:.2f}",
            m(g.docs_per_s), m(g.ratio, 2), "–" if g.rows_compared is None else f"{g.rows_compared:,}", diffs,
            m(g.update_lag_s, 2), m(g.incremental_dps),
            _f(g.beam_cpu), _f(g.beam_rss_mb, 0), g.qs_family or ("(in beam)" if g.n else "–"),
            _f(g.qs_cpu), _f(g.qs_rss_mb, 0),
        ])
    return rows


DESIGN_LEGEND = ("* reference engine (rows of the others are compared with its first run); × ref: docs/s over "
                 "the reference's run of the same repeat; lag s: --update freshness lag")
