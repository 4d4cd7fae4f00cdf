"""Nouveau without a CouchDB: the server's config, Java versions, the tarball's needs, a build's figures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dragnet.index import search_build as nv
from dragnet.couchdb import search_server as server
from dragnet.errors import DragnetError, UsageError

REPO = Path(__file__).resolve().parents[1]
TARBALLS = REPO.parent / "shared" / "nouveau"
YAML = """maxIndexesOpen: 3000
rootDir: /opt/nouveau/data

server:
  applicationConnectors:
    - type: http
      bindHost: 127.0.0.1
      port: 5987
  adminConnectors:
    - type: http
      bindHost: 127.0.0.1
      port: 5988
"""


def test_render_yaml_moves_ports_and_index_dir():
    out = server.render_yaml(YAML, port=16610, admin_port=16611, root_dir="/tmp/x/data")
    assert "port: 16610" in out and "port: 16611" in out and "rootDir: /tmp/x/data" in out
    assert "5987" not in out and "5988" not in out and "/opt/nouveau" not in out
    # the application port is the first connector's, the admin port the second's
    assert out.index("port: 16610") < out.index("adminConnectors") < out.index("port: 16611")


def test_render_yaml_refuses_a_file_that_is_no_nouveau_config():
    with pytest.raises(DragnetError, match="not a Nouveau server's config"):
        server.render_yaml("logging:\n  level: INFO\n", port=1, admin_port=2, root_dir="/d")


@pytest.mark.parametrize("text, major", [
    ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment', 17),
    ('openjdk version "21" 2023-09-19', 21),
    ('java version "1.8.0_392"', 8),
    ('openjdk version "25.0.1" 2025-10-21 LTS', 25),
    ("no such thing", None),
])
def test_java_major(text, major):
    assert server.java_major(text) == major


def test_class_file_java():
    assert server.class_file_java(b"\xca\xfe\xba\xbe\x00\x00\x00\x37") == 11
    assert server.class_file_java(b"\xca\xfe\xba\xbe\x00\x00\x00\x41") == 21
    assert server.class_file_java(b"PK\x03\x04....") is None


def test_release_version_from_lib():
    assert server.release_version(["couch-3.5.0", "couch_mrview-3.5.0", "couch_index-3.5.0", "b64url-1.0.3"]) == "3.5.0"
    assert server.release_version(["couch_log-3.5.2"]) is None


def test_heap_is_checked():
    assert server.check_heap("512m") == "512m" and server.check_heap(None) is None
    with pytest.raises(UsageError, match="--nouveau-heap"):
        server.check_heap("lots")


def test_missing_tarball_names_the_version_and_what_is_there(tmp_path):
    (tmp_path / "nouveau-3.5.0.tar.gz").write_bytes(b"")
    with pytest.raises(DragnetError, match=r"no Nouveau server for CouchDB 3\.4\.2: .*found: nouveau-3\.5\.0\.tar\.gz"):
        server.tarball_for("3.4.2", {server.DIR_ENV: str(tmp_path)})


@pytest.mark.skipif(not (TARBALLS / "nouveau-3.5.2.tar.gz").is_file(), reason="no ../shared/nouveau")
@pytest.mark.parametrize("version, java", [("3.5.0", 11), ("3.5.2", 21)])
def test_java_needed_read_from_the_servers_classes(tmp_path, version, java):
    """3.5.0 (Lucene 9) runs on Java 11, 3.5.2 (Lucene 10) needs 21: read from the class files."""
    env = {"DRAGNET_STATE_DIR": str(tmp_path), server.DIR_ENV: str(TARBALLS)}
    home = server.unpack(server.tarball_for(version, env), version, env)
    assert server.java_needed(home) == java
    assert server.unpack(server.tarball_for(version, env), version, env) == home   # once


@pytest.mark.skipif(shutil.which("java") is None, reason="no java here")
def test_a_java_too_old_is_one_line_naming_found_and_needed():
    java, major = server.find_java(11, "3.5.0")
    assert major >= 11 and java.exists()
    with pytest.raises(DragnetError) as err:
        server.find_java(99, "9.9.9")
    msg = str(err.value)
    assert "\n" not in msg and "Nouveau 9.9.9 needs Java 99 or newer; found Java " in msg


def test_load_indexes_js_and_json(tmp_path):
    js = tmp_path / "by-name.js"
    js.write_text("function (doc) { index('text', 'name', doc.name); }\n")
    [ix] = nv.load_indexes(js)
    assert ix.name == "by_name" and ix.definition["index"].startswith("function")
    doc = tmp_path / "ddoc.json"
    doc.write_text(json.dumps({"nouveau": {"a": {"index": "function (doc) {}", "default_analyzer": "english"}}}))
    assert nv.load_indexes(doc) == [nv.Index("a", {"index": "function (doc) {}", "default_analyzer": "english"})]
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(UsageError, match="bad.json: expected"):
        nv.load_indexes(bad)
    with pytest.raises(UsageError, match="cannot read it"):
        nv.load_indexes(tmp_path / "none.js")


def _task(pid, shard, done, total, started, updated, ddoc="_design/d"):
    return {"type": "search_indexer", "design_document": ddoc, "index": "s", "pid": pid, "node": "n@127.0.0.1",
            "database": f"shards/{shard}/db.123", "changes_done": done, "total_changes": total,
            "started_on": started, "updated_on": updated}


def test_per_shard_counts_a_finished_task_whole():
    polls = [{"t": 1, "tasks": [_task("<0.1.0>", "00000000-7fffffff", 100, 500, 10, 11),
                                _task("<0.2.0>", "80000000-ffffffff", 90, 400, 10, 11),
                                {"type": "indexer", "design_document": "_design/d"}]},
             {"t": 2, "tasks": [_task("<0.1.0>", "00000000-7fffffff", 450, 500, 10, 15)]},
             {"t": 3, "tasks": []}]
    shards = nv.per_shard(polls, "_design/d", "s")
    assert [(s.shard, s.changes_done, s.total_changes) for s in shards] == [
        ("00000000-7fffffff", 500, 500), ("80000000-ffffffff", 400, 400)]
    assert shards[0].docs_per_s == pytest.approx(500 / 5)


def test_index_errors_counted_per_document():
    lines = ["[info] ... function raised exception (new TypeError(\"x is undefined\")) with doc._id a1",
             "[info] ... function raised exception (new TypeError(\"x is undefined\")) with doc._id b2",
             "[notice] 127.0.0.1 GET /db 200",
             "[info] ... function raised exception (new Error(\"boom\")) with doc._id a1"]
    assert nv.count_index_errors(lines) == {"count": 3, "docs": 2, "first_ids": ["a1", "b2"]}


def test_split_adds_up_to_wall_times_cores():
    s = nv.split(10.0, 2, 4.0, 3.0, 2.0)
    assert s["waiting_s"] == pytest.approx(11.0)
    assert sum(s["of_core_time"].values()) == pytest.approx(1.0)
    assert s["of_wall"] == {"qs_cpu": 0.4, "beam_cpu": 0.3, "jvm_cpu": 0.2}
    assert nv.split(10.0, 2, None, 3.0, None)["of_wall"]["qs_cpu"] is None


def test_compare_answers():
    a = {"answers": [{"q": "*:*", "total_hits": 5, "ids": ["1", "2", "3", "4", "5"]},
                     {"q": "type:1", "total_hits": 40000, "ids": None}]}
    assert nv.compare_answers(a, a) == []
    b = {"answers": [{"q": "*:*", "total_hits": 5, "ids": ["1", "2", "3", "4", "6"]},
                     {"q": "type:1", "total_hits": 39999, "ids": None}]}
    assert nv.compare_answers(a, b) == ["*:*: same count (5), different hits", "type:1: 40000 hits vs 39999"]


def test_fresh_definition_changes_the_signature_not_the_function():
    d = {"index": "function (doc) {}", "field_analyzers": {"name": "english"}}
    a, b = nv.fresh_definition(d, "aa"), nv.fresh_definition(d, "bb")
    assert a["index"] == d["index"] and a["field_analyzers"]["name"] == "english"
    assert a["field_analyzers"] != b["field_analyzers"] and d["field_analyzers"] == {"name": "english"}


def test_per_shard_names_no_node_when_a_task_has_none():
    task = {k: v for k, v in _task("<0.1.0>", "00000000-ffffffff", 5, 5, 10, 11).items() if k != "node"}
    shards = nv.per_shard([{"t": 1, "tasks": [task]}, {"t": 2, "tasks": []}], "_design/d", "s")
    assert [(s.shard, s.node, s.changes_done) for s in shards] == [("00000000-ffffffff", "", 5)]
