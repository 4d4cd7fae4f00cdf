"""A CouchDB with smoosh's view channels held as the chase holds them (forecast.chase.HELD, on every node), put
back after, also on an error; a view query asked again when a clustered request times out; and what the
benchmark scripts beside it that build by hand (writer_probe, writer_batches, shards_side_by_side) share: the
design doc and the documents they read, their import, beam's CPU and the node's remsh in a container."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

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


def design(path: str, doc_id: str) -> tuple[dict, str]:
    """The design document in the JSON file at path, as doc_id (its _rev dropped), and its first view's name."""
    ddoc = {k: v for k, v in json.load(open(path)).items() if k != "_rev"}
    ddoc["_id"] = doc_id
    return ddoc, next(k for k in ddoc["views"] if k != "lib")


def documents(path: str) -> list[dict]:
    """The documents of a JSON-lines file."""
    return [json.loads(line) for line in open(path) if line.strip()]


def load(couch: Couch, db: str, docs: list[dict]) -> None:
    """docs into db, 1,000 a request."""
    for i in range(0, len(docs), 1000):
        couch.post(f"/{db}/_bulk_docs", {"docs": docs[i:i + 1000]})


def remsh(container: str, expr: str) -> str:
    """What the node's remsh printed for expr, in a CouchDB container (a Docker exec); the node's cookie is read
    inside the container: it never reaches this machine's argv."""
    return subprocess.run(["docker", "exec", "-i", "-u", "couchdb", "-e", "ERL_FLAGS=", "-e", "HOME=/opt/couchdb",
                           container, "sh", "-c", '/opt/couchdb/bin/remsh -c "$(cat /opt/couchdb/.erlang.cookie)"'],
                          input=expr, capture_output=True, text=True, timeout=60).stdout


def beam_seconds(container: str) -> Callable[[], float]:
    """A reading of the CPU-seconds (user + system) beam in a CouchDB container has used, from /proc/<its host
    pid>/stat."""
    top = subprocess.run(["docker", "top", container, "-eo", "comm,pid"], capture_output=True, text=True,
                         check=True).stdout
    pid = int(next(line.split()[1] for line in top.splitlines() if line.startswith("beam")))
    tick = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / tick
    return read
