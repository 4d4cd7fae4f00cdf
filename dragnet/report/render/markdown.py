"""The report as Markdown: the tables as pipe tables, rankings and verdicts as lists."""

from __future__ import annotations

from dragnet.report.model import Report
from dragnet.report.render import text


def render(rep: Report) -> str:
    from dragnet.report.scenario_table import memory_advice, verdict
    from dragnet.report import tables as rp

    if rep.forecast_only:
        return text.forecast_only(rep)
    out: list[str] = []

    def echo(s: str = "", nl: bool = True) -> None:
        out.append(s + ("\n" if nl else ""))

    groups, dgroups = rep.groups, rep.design_groups
    if groups or not (dgroups or rep.nouveau):
        echo(rp.to_markdown(groups), nl=False)
        lines = rp.ranking_lines(groups)
        if lines:
            echo("\n" + "\n".join(lines[:1] + [f"- {x.strip()}" for x in lines[1:]]))
    if dgroups:
        if groups:
            echo()
        echo(rp.design_markdown(dgroups), nl=False)
    if rep.comparison is not None:
        from dragnet.report.compare import to_markdown
        echo()
        echo(to_markdown(rep.comparison), nl=False)
    ref = rep.disk_reference
    if ref:
        from dragnet.report.scenario_table import DISK_COLUMNS, disk_rows
        echo(f"\n**disk matters?** (× = docs/s against {ref})\n")
        echo(rp.md_table(DISK_COLUMNS, disk_rows(rep.disk_rows)), nl=False)
        echo("".join(f"\n- memory: {line}" for line in memory_advice(rep.disk_rows, ref)))
        echo(f"\n**verdict:** {verdict(rep.disk_rows, ref)}")
    text.tail(rep, echo, markdown=True)
    return "".join(out)
