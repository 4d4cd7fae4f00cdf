"""The report as Markdown: the tables as pipe tables, rankings and verdicts as lists."""

from __future__ import annotations

from typing import Sequence

from dragnet.report.model import Report
from dragnet.report.render import text
from dragnet.report.render.pipe import md_table
from dragnet.report import columns
from dragnet.report.render.cells import (DESIGN_LEGEND, design_notes, design_ranking_lines, design_table_rows,
                                         ranking_lines, table_rows)
from dragnet.report.tables import DesignGroup, Group


def render(rep: Report) -> str:
    from dragnet.report.scenario_table import memory_advice, verdict

    if rep.forecast_only:
        return text.forecast_only(rep)
    out: list[str] = []

    def echo(s: str = "", nl: bool = True) -> None:
        out.append(s + ("\n" if nl else ""))

    groups, dgroups = rep.groups, rep.design_groups
    if groups or not (dgroups or rep.nouveau):
        echo(to_markdown(groups), nl=False)
        lines = ranking_lines(groups)
        if lines:
            echo("\n" + "\n".join(lines[:1] + [f"- {x.strip()}" for x in lines[1:]]))
    if dgroups:
        if groups:
            echo()
        echo(design_markdown(dgroups), nl=False)
    if rep.comparison is not None:
        echo()
        echo(compare_markdown(rep.comparison), nl=False)
    ref = rep.disk_reference
    if ref:
        from dragnet.report import columns
        from dragnet.report.scenario_table import disk_rows
        echo(f"\n**disk matters?** (× = docs/s against {ref})\n")
        echo(md_table(columns.headers(columns.DISK), disk_rows(rep.disk_rows)), nl=False)
        echo("".join(f"\n- memory: {line}" for line in memory_advice(rep.disk_rows, ref)))
        echo(f"\n**verdict:** {verdict(rep.disk_rows, ref)}")
    text.tail(rep, echo, markdown=True)
    return "".join(out)


def to_markdown(groups: Sequence[Group]) -> str:
    return md_table(columns.headers(columns.GROUP), table_rows(groups))


def design_markdown(groups: Sequence[DesignGroup]) -> str:
    out = md_table(columns.headers(columns.DESIGN), design_table_rows(groups)) + "\n" + DESIGN_LEGEND + "\n"
    lines = design_ranking_lines(groups)
    if lines:
        out += "\n" + "\n".join(lines[:1] + [f"- {x.strip()}" for x in lines[1:]]) + "\n"
    notes = design_notes(groups)
    if notes:
        out += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return out


def compare_markdown(cmp) -> str:
    """A comparison (report.compare.Comparison) as a Markdown section: title, table, notes as a list."""
    from dragnet.report import compare
    from dragnet.report.compare import notes, table_rows as compare_rows, title

    return (f"**{title(cmp)}**\n\n" + md_table(columns.headers(compare.COMPARE), compare_rows(cmp)) + "\n"
            + "".join(f"- {line}\n" for line in notes(cmp)))


def gate_markdown(g) -> str:
    """`bench --gate`'s decision (runner.gate.GateOutcome) as the pull request's comment: the comparison the gate
    decided on, with what it judged each figure on, and where its rounds are."""
    if g.comparison is None:
        return f"**gate**: {g.changes}: the same index, nothing built; pass\n"
    return compare_markdown(g.comparison) + f"- gate: {g.rounds} rounds in {', '.join(str(d) for d in g.dirs)}\n"
