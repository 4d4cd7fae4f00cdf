"""`qsbench --couchdb URL`: the servers qsbench ranked over the protocol, built inside a CouchDB on the same
documents, with the ceiling, so the two rankings stand side by side.

A bench (dragnet.bench.run) with one language per CouchDB language of the servers, the ceiling and no
baseline; pure helpers map qsbench's server names to bench languages and put the rankings side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dragnet.bench import run as b
from dragnet.servers.discovery import DIALECT_FILES, ServerSpec


def bench_language(spec: ServerSpec) -> str | None:
    """The bench language that runs spec's code inside CouchDB (None: no bench language does)."""
    variant = f"{spec.language}_{spec.dialect}"
    if variant in b.LANGUAGES:
        return variant
    lang = b.LANGUAGES.get(spec.language)
    return lang.name if lang is not None and lang.view_file == DIALECT_FILES.get(spec.dialect) else None


def languages_for(specs: Sequence[ServerSpec]) -> tuple[dict[str, str], list[str]]:
    """server name -> bench language (the first server of a language: CouchDB runs one per language), and
    why the others are left out."""
    chosen: dict[str, str] = {}
    left = []
    for s in specs:
        lang = bench_language(s)
        if lang is None:
            left.append(f"{s.name}: no bench language runs its {s.dialect} code")
        elif lang in chosen.values():
            other = next(n for n, v in chosen.items() if v == lang)
            left.append(f"{s.name}: CouchDB runs one server for {s.language}, here {other}")
        else:
            chosen[s.name] = lang
    return chosen, left


@dataclass
class SideBySide:
    server: str
    language: str
    protocol_dps: float | None
    protocol_x: float | None      # × the slowest server over the protocol
    couchdb_dps: float | None
    couchdb_x: float | None       # × the same slowest server inside CouchDB
    share: Any                    # dragnet.report.share.Interval or None


def side_by_side(protocol: dict[str, float], names: dict[str, str], loads: Sequence[Any]) -> list[SideBySide]:
    """protocol: server -> median docs/s over the protocol; loads: dragnet.report.share.workloads of the
    builds inside CouchDB. Ratios are to the slowest server of each ranking."""
    engines = {e.engine: e for w in loads[:1] for e in w.engines}
    rows = []
    for server, lang in names.items():
        e = engines.get(lang)
        rows.append(SideBySide(server, lang, protocol.get(server), None, e.docs_per_s if e else None, None,
                               e.share if e else None))
    slow_p = min((r.protocol_dps for r in rows if r.protocol_dps), default=None)
    slow_c = next((r.couchdb_dps for r in sorted(rows, key=lambda r: r.protocol_dps or 0) if r.couchdb_dps), None)
    for r in rows:
        r.protocol_x = r.protocol_dps / slow_p if r.protocol_dps and slow_p else None
        r.couchdb_x = r.couchdb_dps / slow_c if r.couchdb_dps and slow_c else None
    ceiling = engines.get(b.CEILING)
    if ceiling is not None:
        rows.append(SideBySide(b.CEILING, b.CEILING, None, None, ceiling.docs_per_s,
                               ceiling.docs_per_s / slow_c if slow_c and ceiling.docs_per_s else None, None))
    return sorted(rows, key=lambda r: -(r.protocol_dps or float("inf")))


def run_inside(url: str, db: str, data: str, names: dict[str, str], *, views: str, repeat: int,
               results_dir: str | None = None, on_event: Callable[[str, dict], None] | None = None,
               env: dict | None = None) -> dict:
    """The bench of those languages and the ceiling inside the CouchDB at url (data imported into db once)."""
    config = b.BenchConfig(url=url, db=db, languages=list(dict.fromkeys(names.values())), repeat=repeat, data=data,
                           views=views, results_dir=results_dir, baseline=False)
    return b.Bench(config, on_event=on_event, env=env).run()
