"""Nouveau index builds against the live CouchDB and its Nouveau server (.ci/live-couchdb starts both when
../shared/nouveau has the server of the release's version)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.index import search_build as nv
from dragnet.cli import main
from dragnet.couchdb.client import connect, db_path
from dragnet.errors import DragnetError
from tests.conftest import couch_env, generated_db, live_password

REPO = Path(__file__).resolve().parents[1]
INDEX = REPO / "docs" / "studies" / "nouveau" / "declarations.js"
QUERIES = ["name:іван*", "post:голова", "income:[0 TO 1000]"]


@pytest.fixture(scope="module")
def nouveau_url(live_url):
    couch = connect(live_url)
    try:
        enabled = couch.get("/_node/_local/_config/nouveau/enable")
    except Exception:
        enabled = None
    if enabled != "true":
        pytest.skip("the live CouchDB has no Nouveau server (.ci/live-couchdb starts one from ../shared/nouveau)")
    return live_url


@pytest.fixture(scope="module")
def decl_db(nouveau_url):
    with generated_db(nouveau_url, "nouveau", 400, seed=3, q=2) as got:
        yield got


def _addview(url, db, tmp_path, *args):
    r = CliRunner().invoke(main, ["addview", "--benchmark", "--nouveau", *args, "--url", url, "--db", db,
                                  "--interval", "0.2", "--timeout", "600", "--results", str(tmp_path), "--json"])
    return r


def test_engines_build_the_same_index_and_the_build_is_measured(nouveau_url, decl_db, tmp_path):
    couch, db, docs = decl_db
    results = {}
    for lang in ("javascript", "javascript_quickjs"):
        r = _addview(nouveau_url, db, tmp_path / lang, str(INDEX), "--language", lang,
                     *[a for q in QUERIES for a in ("--query", q)])
        assert r.exit_code == 0, r.output
        assert live_password(nouveau_url) not in r.output
        [f] = (tmp_path / lang).glob("nouveau-*.json")
        res = json.loads(f.read_text())
        assert res["schema"] == "dragnet.nouveau/1" and res["language"] == lang
        s = res["summary"]
        assert s["num_docs"] == len(docs) and s["disk_size"] > 0 and s["index_errors"] == 0
        # one search_indexer task per shard, all of the database's changes between them
        assert len(res["shards"]) == 2 and sum(sh["changes"] for sh in res["shards"]) >= len(docs)
        split = res["split"]
        assert split["qs_cpu_s"] > 0 and split["beam_cpu_s"] > 0 and split["jvm_cpu_s"] > 0
        assert res["nouveau"]["jvm"]["jar"].startswith("nouveau-")
        results[lang] = res
        # the fresh design doc is gone
        assert not [r for r in couch.get(f"{db_path(db)}/_design_docs")["rows"] if "dragnet-nouveau" in r["id"]]
    a, b = results.values()
    assert [x.get("total_hits") for x in a["answers"]] == [x.get("total_hits") for x in b["answers"]]
    assert any(x.get("ids") for x in a["answers"])   # at least one query small enough to compare hits
    assert nv.compare_answers(a, b) == []


def test_index_function_exceptions_are_counted_per_document(nouveau_url, decl_db, tmp_path):
    couch, db, docs = decl_db
    src = tmp_path / "throws.js"
    src.write_text("function (doc) { if (/[0-3]$/.test(doc._id)) { throw new Error('boom'); } "
                   "index('string', 'id', doc._id); }\n")
    r = _addview(nouveau_url, db, tmp_path, str(src))
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    throwing = sum(1 for d in docs if d["_id"][-1] in "0123")
    assert 0 < throwing < len(docs)
    assert res["index_errors"]["count"] == throwing and res["summary"]["index_error_docs"] == throwing
    assert res["summary"]["num_docs"] == len(docs) - throwing


def test_a_nouveau_server_that_does_not_answer_is_one_line(nouveau_url, decl_db, tmp_path):
    couch, db, _ = decl_db
    before = couch.get("/_node/_local/_config/nouveau/url")
    couch.request("PUT", "/_node/_local/_config/nouveau/url", json="http://127.0.0.1:9", ok=(200,))
    try:
        r = _addview(nouveau_url, db, tmp_path, str(INDEX))
    finally:
        couch.request("PUT", "/_node/_local/_config/nouveau/url", json=before, ok=(200,))
    assert r.exit_code != 0
    msg = r.output.strip().splitlines()[-1]
    assert "http://127.0.0.1:9 does not answer" in msg and "expected Nouveau 3." in msg


def test_bench_interleaves_engines_and_settings_and_restores_them(nouveau_url, decl_db, tmp_path):
    couch, db, _ = decl_db
    before = couch.get("/_node/_local/_config/nouveau").get("batch_size")
    out = tmp_path / "b"
    r = CliRunner().invoke(main, ["bench", "--nouveau", str(INDEX), "--url", nouveau_url, "--db", db, "--repeat", "1",
                                  "--languages", "javascript,javascript_quickjs", "--config",
                                  "nouveau/batch_size=5,50", "--query", QUERIES[0], "--results", str(out)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "nouveau-bench.json").read_text())
    assert manifest["schema"] == "dragnet.nouveau-bench/1" and len(manifest["builds"]) == 4
    seen = {json.loads(Path(f).read_text())["settings"]["nouveau/batch_size"] for f in manifest["builds"]}
    assert seen == {"5", "50"}
    assert all(not c["differences"] for c in manifest["checks"])
    assert couch.get("/_node/_local/_config/nouveau").get("batch_size") == before
    assert "same hits and counts" in r.output
    # the folder reads back: report shows the four builds, compare judges them along the setting
    rep = CliRunner().invoke(main, ["report", str(out), "--format", "json"])
    assert rep.exit_code == 0, rep.output
    rows = json.loads(rep.output)["nouveau"]["rows"]
    assert sum(x["builds"] for x in rows) == 4 and {x["num_docs"][0] for x in rows} == {400}
    cmp = CliRunner().invoke(main, ["compare", str(out), "--along", "config", "--json"])
    assert cmp.exit_code == 0, cmp.output
    cells = json.loads(cmp.output)["cells"]
    assert sorted(x["axes"]["language"] for x in cells) == ["javascript", "javascript_quickjs"]
    # one round: the same round key on both sides (paired from two rounds on)
    assert all(x["old"]["n"] == x["new"]["n"] == 1 and x["old"]["rounds"] == x["new"]["rounds"] for x in cells)


def test_couch_up_nouveau_local_and_down(nouveau_url, tmp_path):
    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home:
        pytest.skip("DRAGNET_COUCHDB_HOME is not set")
    from dragnet.couchdb import control as ctl
    from dragnet.couchdb import search_server as server
    from dragnet.couchdb.local import is_alive

    env = couch_env(tmp_path, "pw-" + os.urandom(6).hex())
    port = server.free_port()
    runner = CliRunner()
    r = runner.invoke(main, ["couch", "up", "--backend", "local", "--couchdb-home", home, "--port", str(port),
                             "--nouveau", "--nouveau-heap", "256m", "--json"], env=env)
    try:
        assert r.exit_code == 0, r.output
        report = json.loads(r.output[r.output.index("{"):])
        assert report["nouveau"]["heap"] == "256m" and report["nouveau"]["java_version"] >= 11
        state = server.load(port, env)
        assert state is not None and is_alive(state.pid, state.pid_start)
        assert "-Xmx256m" in Path(f"/proc/{state.pid}/cmdline").read_bytes().decode(errors="replace")
        couch = connect(f"http://127.0.0.1:{port}", user="admin", password=env["COUCHDB_PASSWORD"])
        assert couch.get("/_node/_local/_config/nouveau/url") == state.url
    finally:
        r2 = runner.invoke(main, ["couch", "down", "--port", str(port), "--purge"], env=env)
    assert r2.exit_code == 0, r2.output
    assert "its Nouveau server stopped" in r2.output
    deadline = time.time() + 10
    while is_alive(state.pid, state.pid_start) and time.time() < deadline:
        time.sleep(0.2)
    assert not is_alive(state.pid, state.pid_start)
    assert server.load(port, env) is None and ctl.load_state(port, env) is None


def test_nouveau_off_is_one_line(nouveau_url):
    couch = connect(nouveau_url)
    couch.request("PUT", "/_node/_local/_config/nouveau/enable", json="false", ok=(200,))
    try:
        with pytest.raises(DragnetError, match=r"Nouveau is off on .*: start it with `dragnet couch up "
                                               r"--backend local --nouveau`"):
            nv.nouveau_config(couch)
    finally:
        couch.request("PUT", "/_node/_local/_config/nouveau/enable", json="true", ok=(200,))


def test_bench_ddoc_builds_its_nouveau_index_beside_its_views_in_one_table(nouveau_url, decl_db, tmp_path):
    couch, db, docs = decl_db
    ddoc = {"_id": "_design/both", "language": "javascript",
            "views": {"by_id": {"map": "function (doc) { emit(doc._id, 1); }"}},
            "nouveau": {"decl": {"index": INDEX.read_text()}}}
    (tmp_path / "both.json").write_text(json.dumps(ddoc))
    out = tmp_path / "b"
    r = CliRunner().invoke(main, ["bench", "--ddoc", str(tmp_path / "both.json"), "--url", nouveau_url, "--db", db,
                                  "--languages", "javascript,javascript_quickjs", "--repeat", "2", "--no-baseline",
                                  "--no-ceiling", "--results", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert live_password(nouveau_url) not in r.output
    got = json.loads(r.stdout)
    rows = {(g["view"], g["label"]): g for g in got["report"]["design"]["groups"]}
    # the views and the search index, each on both engines, two builds each, in the one design table
    assert set(rows) == {(v, lang) for v in ("(all)", "search:decl") for lang in ("javascript", "javascript_quickjs")}
    assert all(g["n"] == 2 for g in rows.values())
    builds = [json.loads(f.read_text()) for f in (out / "nouveau" / "decl").glob("nouveau-r*.json")]
    assert len(builds) == 4 and {b["design"] for b in builds} == {"_design/both"}
    assert all(b["summary"]["num_docs"] == len(docs) for b in builds)
    # two rounds: no interval, said so, never an absurd one
    pairs = [p for p in got["report"]["design"]["ranking"]["pairs"] if p["view"] == "search:decl"]
    assert pairs and all(p["state"] == "unresolved" and p["why"] == "too few runs" for p in pairs)
    text = CliRunner().invoke(main, ["report", str(out)])
    assert text.exit_code == 0 and "n=2: no interval" in text.output and "search:decl" in text.output
    assert not [x for x in couch.get(f"{db_path(db)}/_design_docs")["rows"] if "dragnet" in x["id"]]


def test_bench_nouveau_imports_its_data(nouveau_url, tmp_path):
    from dragnet.data.importer import import_documents  # noqa: F401  (the importer --data uses)
    from tests.conftest import normalised_declarations

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in normalised_declarations(120, 5)))
    db = f"nouveau_data_{int(time.time())}"
    couch = connect(nouveau_url)
    try:
        r = CliRunner().invoke(main, ["bench", "--nouveau", str(INDEX), "--data", str(data), "--url", nouveau_url,
                                      "--db", db, "--repeat", "1", "--languages", "javascript",
                                      "--results", str(tmp_path / "b")])
        assert r.exit_code == 0, r.output
        [f] = (tmp_path / "b").glob("nouveau-r01-*.json")
        assert json.loads(f.read_text())["summary"]["num_docs"] == 120
        assert couch.get(f"{db_path(db)}/_local/dragnet-import")["count"] == 120
    finally:
        couch.request("DELETE", db_path(db), ok=(200, 202, 404))
