"""`dragnet doctor` as text: one line per part, and under each missing one what it disables and what adds it."""

from __future__ import annotations

GROUPS = {"couchdb": "CouchDB to measure", "tools": "tools", "servers": "query servers"}


def lines(checkup) -> list[str]:
    """The parts by group (measure.doctor.Checkup), then a one-line total."""
    out = []
    width = max(len(p.name) for p in checkup.parts)
    for group, title in GROUPS.items():
        parts = [p for p in checkup.parts if p.group == group]
        if not parts:
            continue
        out.append(f"{title}:")
        for p in parts:
            out.append(f"  {'ok ' if p.found else 'NO '} {p.name:<{width}}  {p.detail}")
            if not p.found:
                out.append(f"       {'':<{width}}  disables: {p.disables}")
                if p.adds:
                    out.append(f"       {'':<{width}}  adds it:  {p.adds}")
    missing = checkup.missing
    out.append(f"{len(checkup.parts) - len(missing)} of {len(checkup.parts)} parts here"
               + (f"; missing: {', '.join(p.name for p in missing)}" if missing else ""))
    return out
