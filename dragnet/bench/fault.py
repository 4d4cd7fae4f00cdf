"""`bench --ddoc`: each run's differences classified (dragnet.index.fault) with the reference engine run here.

A run of another engine is compared with the reference's first build (classified by re-running the
functions in the reference engine); every later build of an engine is also compared with that engine's
own first build, and what differs there is the function's fault by definition.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from dragnet.index import fault as fault
from dragnet.couchdb.client import Couch, CouchError, db_path


class EnginePool:
    """Reference-engine processes, one per view (its map function loaded), started on first use and
    closed by close(); a language that cannot run here leaves every difference unclassified."""

    def __init__(self, language: str | None, design: Any, env: dict | None = None):
        self.language, self.design, self.env = language, design, env
        self.engines: dict[str, Any] = {}
        self.why = ""
        self.spec = None
        if language is None or language == "query":
            self.why = "the reference is Mango, which runs inside CouchDB"
            return
        from dragnet.errors import DragnetError
        from dragnet.servers.reference_engine import spec_for

        try:
            self.spec = spec_for(language, env)
        except DragnetError as exc:
            self.why = str(exc)

    def factory(self):
        if self.spec is None:
            return None

        def start(view: str):
            from dragnet.servers.reference_engine import ProcessEngine

            if view not in self.engines:
                views = self.design.doc["views"]
                self.engines[view] = ProcessEngine(self.spec, views[view]["map"], views.get("lib"))
            return self.engines[view]
        return start

    def close(self) -> None:
        for e in self.engines.values():
            e.close()
        self.engines.clear()


def _fetcher(couch: Couch, db: str):
    def fetch(doc_id: str) -> dict | None:
        try:
            return couch.get(f"{db_path(db)}/{quote(doc_id, safe='')}")
        except CouchError:
            return None
    return fetch


def judge(comparison: dict, reference_rows: dict[str, str], *, same_engine: bool, pool: EnginePool,
          couch: Couch | None, db: str) -> dict:
    """Add "findings" and "classes" to a compare_files result (in place; returned)."""
    if not comparison.get("differences"):
        comparison["classes"] = {}
        return comparison
    if same_engine:
        findings = [fault.Finding(q, fault.same_engine_class(q), int(c.get("differences") or 0),
                                  "differs between two builds of the same engine")
                    for q, c in (comparison.get("queries") or {}).items() if c.get("differences")]
    else:
        inputs = fault.Inputs(reference_rows=reference_rows, views=pool.design.doc["views"],
                              engine=pool.factory(), why_unchecked=pool.why,
                              fetch_doc=_fetcher(couch, db) if couch is not None else (lambda _id: None),
                              cache=pool.engines)
        findings = fault.classify(comparison, inputs)
    comparison["findings"] = [f.as_dict() for f in findings]
    comparison["classes"] = fault.class_counts(findings)
    return comparison


def summary(comparison: dict) -> dict:
    """What the manifest keeps of a comparison."""
    # "note": why there is nothing to compare yet (no reference build before this one)
    return {k: comparison[k] for k in ("reference", "differences", "rows_compared", "classes", "note")
            if k in comparison}
