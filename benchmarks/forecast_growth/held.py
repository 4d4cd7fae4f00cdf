"""A CouchDB with smoosh's view channels held as the chase holds them (forecast.chase.HELD, on every node), put
back after, also on an error; and a view query asked again when a clustered request times out. For the
benchmark scripts beside it that build by hand (writer_probe, shards_side_by_side)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dragnet.axes import config as axis_config  # noqa: E402
from dragnet.couchdb.client import Couch, CouchError, connect  # noqa: E402
from dragnet.forecast import chase as ch  # noqa: E402


@contextlib.contextmanager
def held(url: str, extra: tuple[str, ...] = ()) -> Iterator[Couch]:
    """A client of the CouchDB at url (credentials from the URL or COUCHDB_USER/COUCHDB_PASSWORD) with the
    chase's held settings, and `extra` ones ("section/key=value"), applied on every node for the block."""
    couch = connect(url, timeout=3600)
    applied = axis_config.Applied()
    try:
        nodes = axis_config.nodes(couch)
        for s in (axis_config.parse(t) for t in (*ch.HELD, *extra)):
            for node in nodes:
                applied.set(couch, s, s.values[0], node)
        yield couch
    finally:
        applied.restore(couch)


def view_answered(couch: Couch, path: str) -> None:
    """GET path until it answers: a clustered query gives up after [fabric] request_timeout, the build goes on."""
    while True:
        try:
            couch.get(path)
            return
        except CouchError as exc:
            if exc.status != 500 or "timeout" not in str(exc):
                raise
