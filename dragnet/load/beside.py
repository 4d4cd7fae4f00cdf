"""A load beside one build (dragnet.index.addview calls it at the build's four moments; talks HTTP).

start (once the design doc is saved): the load runs alone for `before_s` seconds, the window before the build;
begin (the build's view request leaves): the view kinds start; end (the build is over): the load stops, every
acknowledged write is checked, the index's coverage read and the load's documents purged, before anything
else reads the view (its rows are the idle build's again); abort (Ctrl-C, SIGTERM, a crash): the load stops
first and its documents go.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from dragnet.couchdb.client import Couch
from dragnet.load import spec as S
from dragnet.load.compiled import new_load
from dragnet.load.generator import Load


@dataclass
class Beside:
    spec: S.LoadSpec
    max_seconds: float = 6 * 3600.0
    before_s: float = 5.0
    seed: int = 0
    on_note: Callable[[str], None] | None = None

    def __post_init__(self):
        self.load: Load | None = None

    def start(self, couch: Couch, db: str) -> None:
        self.load = new_load(couch, db, self.spec, max_seconds=self.max_seconds, seed=self.seed,
                             before_s=self.before_s, on_note=self.on_note)
        self.load.prepare()
        self.load.start()
        time.sleep(self.before_s)

    def begin(self, view_query: str | None) -> None:
        if self.load is not None:
            self.load.begin_build(view_query)

    def end(self, ddoc_path: str) -> tuple[dict, str | None]:
        """The record and, when the load lost an acknowledged write, the error that fails the run."""
        load = self.load
        load.build_ended()
        record = load.stop()
        try:
            record["index"] = load.coverage(ddoc_path)
        except Exception as exc:     # the coverage is a figure, not a reason to lose the build's
            record["index"] = {"error": str(exc).splitlines()[0]}
        record["purge"] = load.purge()
        self.load = None
        lost = record["writes_check"]["lost"]
        error = (f"the load lost {lost} acknowledged write(s) (first: {record['writes_check']['lost_writes'][0]['id']})"
                 if lost else None)
        return record, error

    def abort(self) -> None:
        load, self.load = self.load, None
        if load is None:
            return
        try:
            load.stop()
        finally:
            load.purge()
