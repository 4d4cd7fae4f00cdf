"""The reference engine as a query-server process on this machine, for dragnet.fault's checks.

It speaks the protocol as CouchDB does (`reset`, `add_lib`, `add_fun`, `map_doc`, `reduce`, `rereduce`)
to the same server CouchDB runs for the language (couchjs for `javascript`, QuickJS for
`javascript_quickjs`, dragnet's node/bun/chakra servers, ...), found by dragnet.servers.discovery.
"""

from __future__ import annotations

from typing import Any

from dragnet.errors import DragnetError
from dragnet.servers.protocol import RESET_CONFIG, ProtocolError, QueryServerProcess
from dragnet.servers.available import discover
from dragnet.servers.discovery import ServerSpec


def spec_for(language: str, env: dict | None = None) -> ServerSpec:
    """The server CouchDB would run for `language` here (ES5 file dialect first, as CouchDB's own)."""
    specs, skipped = discover(env=env)
    mine = sorted((s for s in specs if s.language == language), key=lambda s: s.dialect != "es5")
    if not mine:
        why = "; ".join(f"{s.name}: {s.reason}" for s in skipped) or "none found"
        raise DragnetError(f"no query server for language {language} on this machine ({why})")
    return mine[0]


class ProcessEngine:
    """One query-server process with a view's map function (and views.lib) loaded."""

    def __init__(self, spec: ServerSpec, map_source: str | None = None, lib: dict | None = None,
                 timeout: float = 30.0):
        self.name = spec.name
        self.qs = QueryServerProcess(spec.argv, env=dict(spec.env) or None, timeout=timeout, name=spec.name)
        try:
            self._true(["reset", RESET_CONFIG])
            if lib:
                self._true(["add_lib", lib])
            if map_source:
                self._true(["add_fun", map_source])
        except BaseException:
            self.close()
            raise

    def _true(self, msg: list) -> None:
        got = self.qs.prompt(msg)
        if got is not True:
            raise ProtocolError(f"query server {self.name} answered {str(got)[:200]} to {msg[0]}", self.name)

    def _reduction(self, msg: list) -> Any:
        got = self.qs.prompt(msg)
        if not (isinstance(got, list) and len(got) == 2 and got[0] is True and isinstance(got[1], list)):
            raise ProtocolError(f"query server {self.name} answered {str(got)[:200]} to {msg[0]}", self.name)
        return got[1][0]

    def reduce(self, source: str, kvs: list) -> Any:
        return self._reduction(["reduce", [source], kvs])

    def rereduce(self, source: str, values: list) -> Any:
        return self._reduction(["rereduce", [source], values])

    def map_doc(self, doc: dict) -> Any:
        return self.qs.prompt(["map_doc", doc])

    def close(self) -> None:
        try:
            self.qs.close()
        except Exception:      # noqa: BLE001 - closing a dead process is not an error here
            pass

    def __enter__(self) -> "ProcessEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
