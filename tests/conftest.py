"""Shared test fixtures: the recorded CouchDB 3.5.0 fixtures and an optional live CouchDB."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import threading
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures" / "couchdb-3.5.0"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """Recordings from a real CouchDB 3.5.0 (../shared/fixtures); CI always has them."""
    if not FIXTURES.is_dir():
        pytest.fail(f"recorded fixtures missing at {FIXTURES}")
    return FIXTURES


# the generated declarations the query-server protocol tests (qsbench, qsddoc) replay, made once a session
QS_COUNT, QS_SEED = 60, 11


@pytest.fixture(scope="session")
def sample(tmp_path_factory) -> Path:
    from dragnet.qsbench import run as qsbench

    return qsbench.generated_docs_path(QS_COUNT, QS_SEED, tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def docs(sample):
    from dragnet.qsbench import run as qsbench

    return qsbench.load_docs(sample)


@pytest.fixture(scope="session")
def live_url() -> str:
    """URL of a real CouchDB from DRAGNET_TEST_COUCHDB_URL; tests using it skip without one."""
    url = os.environ.get("DRAGNET_TEST_COUCHDB_URL")
    if not url:
        pytest.skip("DRAGNET_TEST_COUCHDB_URL is not set (needs a live CouchDB)")
    return url


@pytest.fixture()
def live_db(live_url):
    """A fresh database name on the live CouchDB, deleted afterwards."""
    from dragnet.couchdb.client import connect, db_path

    couch = connect(live_url)
    name = f"dragnet_test_{uuid.uuid4().hex[:10]}"
    yield couch, name
    couch.request("DELETE", db_path(name), ok=(200, 202, 404))


def write_items(path: Path, count: int) -> Path:
    """`count` small item documents (seeded), as JSON lines: the compare and gate recipes' data."""
    import random

    rng = random.Random(7)
    with open(path, "w") as fh:
        for i in range(count):
            fh.write(json.dumps({"_id": f"item-{i:05d}", "type": "item", "group": f"g{i % 37}",
                                 "name": f"name {rng.randrange(10**6)}",
                                 "values": [rng.randrange(1000) for _ in range(20)]}) + "\n")
    return path


def live_password(url: str) -> str:
    """The admin password the live tests use (from the URL, else COUCHDB_PASSWORD): CouchDB 3 has one, so a
    "the password is not shown" check always has something to look for."""
    from urllib.parse import unquote, urlsplit

    password = urlsplit(url).password
    password = unquote(password) if password else os.environ.get("COUCHDB_PASSWORD")
    if not password:
        pytest.fail("the live CouchDB needs admin credentials in DRAGNET_TEST_COUCHDB_URL or COUCHDB_PASSWORD")
    return password


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_json(answers: list[tuple[int, object]], writes: tuple[int, object] | None = None):
    """A loopback HTTP server answering GETs from `answers` in order (the last one repeats), and PUTs and
    POSTs with `writes` when given.

    Returns (server, GET paths seen); call server.shutdown() when done. For client-side behaviour on
    one recorded CouchDB answer; anything about CouchDB itself needs the live fixtures.
    """
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            status, body = answers[min(len(seen), len(answers) - 1)]
            seen.append(self.path)
            self._send(status, body)

        def do_PUT(self):
            if writes is None:
                self.send_error(405)
                return
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(*writes)

        do_POST = do_PUT

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, seen


def normalised_declarations(n: int, seed: int) -> list[dict]:
    """n generated declarations in the shape the views and benchmarks use."""
    from data_prep.generate import declarations
    from data_prep.normalise import normalise

    return [normalise(d) for d in declarations(n, seed)]


@contextlib.contextmanager
def generated_db(live_url: str, prefix: str, n: int, seed: int, q: int = 2):
    """n generated normalised declarations imported into a fresh database on the live CouchDB:
    yields (couch, name, docs); the database is deleted afterwards."""
    import time

    from dragnet.data import importer as importer
    from dragnet.couchdb.client import connect, db_path

    couch = connect(live_url)
    name = f"{prefix}_{int(time.time())}"
    docs = normalised_declarations(n, seed)
    summary = importer.import_documents(couch, name, ((f"gen:{i}", json.dumps(d)) for i, d in enumerate(docs)),
                                        importer.ImportOptions(q=q))
    assert summary.imported == n
    try:
        yield couch, name, docs
    finally:
        couch.request("DELETE", db_path(name), ok=(200, 202, 404))


def cluster_build(runner, env: dict, url: str, data: Path, q: int, n: int, out: Path, secret: str):
    """Import data into a fresh `cluster_q{q}_n{n}` with q shards and n replicas, then build the income view on
    it with `addview --benchmark`: (results dict, output, poller figures); the secret is in neither."""
    from dragnet.measure import poller as poller
    from dragnet.cli import main

    db = f"cluster_q{q}_n{n}"
    r = runner.invoke(main, ["import", str(data), "--url", url, "--db", db, "--q", str(q), "--n", str(n)], env=env)
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["addview", str(REPO / "views" / "income" / "map.js"), "--benchmark", "--url", url,
                             "--db", db, "--interval", "0.1", "--results", str(out)], env=env)
    assert r.exit_code == 0, r.output
    files = list(out.glob("addview-*.json"))
    assert len(files) == 1, files
    res = json.loads(files[0].read_text())
    assert secret not in r.output and secret not in json.dumps(res)
    assert res["summary"]["ok"], res["summary"]["error"]
    assert (res["db"]["shards"], res["db"]["replicas"]) == (q, n)
    return res, r.output, poller.analyze(res["polls"], res["view"]["ddoc"])


def couch_env(tmp_path: Path, password: str) -> dict:
    """The environment `dragnet couch` reads, with a state dir of the test's own and an admin."""
    env = {k: v for k, v in os.environ.items() if k not in ("COUCHDB_USER", "COUCHDB_PASSWORD")}
    env.update(DRAGNET_STATE_DIR=str(tmp_path / "state"), COUCHDB_USER="admin", COUCHDB_PASSWORD=password)
    return env


@pytest.fixture(scope="module")
def engine():
    """A Docker SDK client of an engine that answers, for tests of dragnet's image in DRAGNET_TEST_DOCKER_IMAGE."""
    if not os.environ.get("DRAGNET_TEST_DOCKER_IMAGE"):
        pytest.skip("DRAGNET_TEST_DOCKER_IMAGE is not set (run .ci/docker-engine start)")
    from dragnet.couchdb import docker as couchdb_docker

    try:
        return couchdb_docker.client()
    except Exception:
        pytest.skip("no Docker engine")


# --- live tests: every test that needs the live CouchDB is marked `live`, and the run says what they cost

_LIVE = {"ran": 0, "skipped": 0, "seconds": 0.0}
# the same for tests marked `docker`, plus lines the docker tests add (what ran inside the image)
_DOCKER = {"ran": 0, "skipped": 0, "seconds": 0.0}
DOCKER_REPORT: list[str] = []
_MARKED: dict[str, set[str]] = {"live": set(), "docker": set()}   # node ids by marker (keywords also hold names)


def pytest_collection_modifyitems(items):
    for item in items:
        if "live_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.live)
        for marker, ids in _MARKED.items():
            if item.get_closest_marker(marker) is not None:
                ids.add(item.nodeid)


def pytest_runtest_logreport(report):
    for marker, tally in (("live", _LIVE), ("docker", _DOCKER)):
        if report.nodeid not in _MARKED[marker]:
            continue
        tally["seconds"] += report.duration
        if report.when == "call":
            tally["ran"] += 1
        elif report.when == "setup" and report.skipped:
            tally["skipped"] += 1


def pytest_terminal_summary(terminalreporter):
    if _LIVE["ran"] or _LIVE["skipped"]:
        where = "against DRAGNET_TEST_COUCHDB_URL" if os.environ.get("DRAGNET_TEST_COUCHDB_URL") else \
            "skipped: DRAGNET_TEST_COUCHDB_URL is not set"
        terminalreporter.write_line(f"live CouchDB tests: {_LIVE['ran']} ran, {_LIVE['skipped']} skipped "
                                    f"({where}), {_LIVE['seconds']:.0f} s")
    if _DOCKER["ran"] or _DOCKER["skipped"]:
        image = os.environ.get("DRAGNET_TEST_DOCKER_IMAGE")
        where = f"image {image}" if image else "DRAGNET_TEST_DOCKER_IMAGE is not set or no engine"
        terminalreporter.write_line(f"docker tests: {_DOCKER['ran']} ran, {_DOCKER['skipped']} skipped "
                                    f"({where}), {_DOCKER['seconds']:.0f} s")
        for line in DOCKER_REPORT:
            terminalreporter.write_line(f"  {line}")
