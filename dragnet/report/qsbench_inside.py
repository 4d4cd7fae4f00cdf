"""`qsbench --couchdb`: qsbench's ranking over the protocol beside the same servers' builds inside CouchDB.

side_by_side() is pure: it puts the two rankings in one table's rows; the InsideReport holds them for
report.render.qsbench (runner/qsbench runs the bench that fills it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from dragnet.bench import run as b


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



@dataclass
class InsideReport:
    """What `qsbench --couchdb` prints after qsbench's own tables: both rankings side by side, each engine
    against the ceiling inside CouchDB, and where the bench's results are."""

    folder: Path
    manifest: dict
    rows: list[SideBySide]
    loads: list                     # report.share.Workload of the builds inside CouchDB

    @property
    def shards(self) -> Any:
        return self.manifest["cluster"].get("q")
