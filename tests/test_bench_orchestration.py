"""bench's guards and cleanups with no CouchDB: a loopback server plays the database and /_active_tasks."""

from __future__ import annotations

import json

import pytest
from loopback import Loopback

from dragnet.bench import run as bench
from dragnet.data import ensure as ensure
from dragnet.couchdb.client import connect
from dragnet.errors import DragnetError

DB = "decl"


def _data(tmp_path, n=3):
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps({"_id": f"d{i}", "n": i}) + "\n" for i in range(n)))
    return p


def test_a_database_dragnet_did_not_fill_is_never_dropped(tmp_path):
    script = {("GET", f"/{DB}"): [(200, {}, {"db_name": DB, "doc_count": 5})],
              ("GET", f"/{DB}/_local/dragnet-import"): [(404, {}, {"error": "not_found"})]}
    with Loopback(script) as lb:
        with pytest.raises(DragnetError, match="did not import"):
            ensure.ensure_data(connect(lb.url), DB, _data(tmp_path))
        assert lb.requests("DELETE", f"/{DB}") == []
        assert lb.requests("POST", f"/{DB}/_bulk_docs") == []


def test_the_same_file_already_imported_is_not_imported_again(tmp_path):
    data = _data(tmp_path)
    marker = {**ensure.file_fingerprint(data), "doc_count": 3}
    script = {("GET", f"/{DB}"): [(200, {}, {"db_name": DB, "doc_count": 3})],
              ("GET", f"/{DB}/_local/dragnet-import"): [(200, {}, marker)]}
    with Loopback(script) as lb:
        out = ensure.ensure_data(connect(lb.url), DB, data)
        assert out["imported"] is False and out["reason"] == "already imported"
        assert lb.requests("DELETE", f"/{DB}") == [] and lb.requests("POST", f"/{DB}/_bulk_docs") == []


def test_a_database_that_lost_documents_is_dropped_and_refilled(tmp_path):
    data = _data(tmp_path)
    marker = {**ensure.file_fingerprint(data), "doc_count": 3}
    state = {"exists": True, "docs": 2}

    def handler(method, path, body):
        if (method, path) == ("GET", f"/{DB}"):
            return (200, {}, {"db_name": DB, "doc_count": state["docs"], "cluster": {"q": 2, "n": 1}}) \
                if state["exists"] else (404, {}, {"error": "not_found"})
        if (method, path) == ("GET", f"/{DB}/_local/dragnet-import"):
            return 200, {}, marker
        if (method, path) == ("DELETE", f"/{DB}"):
            state.update(exists=False, docs=0)
            return 200, {}, {"ok": True}
        if (method, path) == ("PUT", f"/{DB}"):
            state["exists"] = True
            return 201, {}, {"ok": True}
        if (method, path) == ("POST", f"/{DB}/_bulk_docs"):
            docs = json.loads(body)["docs"]
            state["docs"] += len(docs)
            return 201, {}, [{"ok": True, "id": d["_id"], "rev": "1-x"} for d in docs]
        if method == "PUT" and path == f"/{DB}/_local/dragnet-import":
            return 201, {}, {"ok": True}
        return 404, {}, {"error": "not_found"}

    with Loopback(handler=handler) as lb:
        out = ensure.ensure_data(connect(lb.url), DB, data)
    assert out["imported"] is True and "2 documents, 3 after the import" in out["reason"]
    assert out["doc_count"] == 3


def test_cleanup_deletes_the_ddoc_and_waits_for_the_dbs_tasks_only(tmp_path):
    ours = {"type": "view_compaction", "database": f"shards/00000000-7fffffff/{DB}.1795257200"}
    other = {"type": "indexer", "database": "shards/00000000-7fffffff/other.1795257200"}
    script = {("GET", f"/{DB}/_design/x"): [(200, {}, {"_id": "_design/x", "_rev": "1-a"})],
              ("DELETE", f"/{DB}/_design/x"): [(200, {}, {"ok": True})],
              ("POST", f"/{DB}/_view_cleanup"): [(202, {}, {"ok": True})],
              ("GET", "/_active_tasks"): [(200, {}, [ours, other]), (200, {}, [ours, other]), (200, {}, [other])]}
    with Loopback(script) as lb:
        info = bench.cleanup(connect(lb.url), DB, "_design/x", timeout=10, interval=0.01)
        assert info["ddoc_deleted"] is True and info["tasks_left"] == 0
        assert len(lb.requests("GET", "/_active_tasks")) == 3      # waited until only other dbs' tasks ran


def test_cleanup_gives_up_after_its_timeout_and_says_how_many_tasks_were_left(tmp_path):
    ours = {"type": "indexer", "database": f"shards/00000000-7fffffff/{DB}.1795257200"}
    script = {("GET", f"/{DB}/_design/x"): [(404, {}, {"error": "not_found"})],
              ("POST", f"/{DB}/_view_cleanup"): [(202, {}, {"ok": True})],
              ("GET", "/_active_tasks"): [(200, {}, [ours])]}
    with Loopback(script) as lb:
        info = bench.cleanup(connect(lb.url), DB, "_design/x", timeout=0.3, interval=0.05)
    assert info["ddoc_deleted"] is True and info["tasks_left"] == 1
