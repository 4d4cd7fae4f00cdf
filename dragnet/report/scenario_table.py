"""The "disk matters?" table: cells of dragnet.axes.scenario's rows, the memory advice and the verdict, for every
renderer."""

from __future__ import annotations

from dragnet.axes.scenario import Row


def disk_rows(rows: list[Row]) -> list[list[str]]:
    """Table cells for the "disk matters?" table (its columns: report.columns.DISK)."""
    from dragnet.report import columns

    return columns.text_rows(columns.DISK, rows)


def disk_values(rows: list[Row]) -> list[list[float | None]]:
    """The numbers behind disk_rows' cells, column for column (None for a text cell)."""
    from dragnet.report import columns

    return columns.value_rows(columns.DISK, rows)


def memory_advice(rows: list[Row], reference: str) -> list[str]:
    """What a memory limit must leave CouchDB, from the builds without one: per language, its own memory
    (own_memory()) in the reference scenario, and each limited scenario whose limit is below it (an OOM
    kill there says nothing about the disk)."""
    from dragnet.couchdb.storage import format_size
    own = {(r.language, r.storage): r.own_memory for r in rows
           if r.scenario == reference and r.own_memory and r.memory_limit is None}
    lines = []
    for (lang, st), m in own.items():
        lines.append(f"CouchDB's own memory in {reference} ({lang}, {st}): {format_size(m)} "
                     "(beam + query servers, RSS peaks); a memory limit must hold this plus the page cache it "
                     "means to leave")
    for r in rows:
        m = own.get((r.language, r.storage))
        if r.memory_limit and m and r.memory_limit < m:
            lines.append(f"{r.scenario} ({r.language}): the limit {format_size(r.memory_limit)} is below "
                         f"CouchDB's own {format_size(m)}"
                         + (f"; its {r.oom} OOM kill(s) say nothing about the disk" if r.oom else
                            "; builds that finished under it had less page cache than the limit suggests"))
    return lines


def disk_summary(rows: list[Row], reference: str) -> dict:
    """The "disk matters?" rows, memory lines and verdict, as --json gives them."""
    from dataclasses import asdict
    return {"disk_matters": [asdict(r) for r in rows], "memory_advice": memory_advice(rows, reference),
            "verdict": verdict(rows, reference)}


def verdict(rows: list[Row], reference: str) -> str:
    """One line from the numbers, by the one verdict rule (measure/decide): a scenario is disk-bound where the
    interval of its docs/s over the reference's (same language and storage; unpaired, as the rows keep no
    rounds) lies below 1 − 2%; the slowest such scenario is named, else the slowest one with its interval."""
    from dragnet.measure import decide
    from dragnet.report.ranking import interval_text

    ooms = [r for r in rows if r.oom]
    refs = {(r.language, r.storage): r for r in rows if r.scenario == reference}
    cands = [r for r in rows if r.scenario != reference and r.ratio is not None]
    head = ""
    if ooms:
        head = "; ".join(f"OOM-killed in {r.scenario} ({r.language})" for r in ooms) + "; "
    if not cands:
        return head + "no scenario to compare with the reference"
    judged = [(r, decide.unpaired_interval(r.docs_per_sec, refs[(r.language, r.storage)].docs_per_sec))
              for r in cands if refs.get((r.language, r.storage)) and refs[(r.language, r.storage)].docs_per_sec]
    slower = [(r, iv) for r, iv in judged if decide.classify(iv) == decide.SEPARATED and iv.ratio < 1]
    if slower:
        worst, iv = min(slower, key=lambda x: x[1].ratio)
        return head + (f"disk-bound in {worst.scenario} ({worst.language}, {worst.storage}): ×{iv.ratio:.2f} "
                       f"{interval_text(iv, 2)}")
    worst = min(cands, key=lambda r: r.ratio)
    iv = next((v for r, v in judged if r is worst), None)
    return head + (f"disk does not matter in these runs: slowest scenario {worst.scenario} ({worst.language}) "
                   f"×{worst.ratio:.2f}" + (f", {interval_text(iv, 2)} not below 1 − {decide.NOISE:.0%}"
                                            if iv is not None else ""))
