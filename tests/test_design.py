"""Design-doc loader: a JSON file, a couchapp folder and a live URL give the same normalised design doc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dragnet import design
from dragnet.errors import UsageError
from conftest import serve_json

DDOC = Path(__file__).resolve().parent / "ddoc"
FOLDER, JSON_FILE = DDOC / "app", DDOC / "app.json"


def test_folder_and_json_file_give_the_same_design_doc():
    a = design.load(FOLDER)
    b = design.load(JSON_FILE)
    assert a.as_couch() == b.as_couch()
    assert a.view_names == ["by_year", "income_stats", "workplace_words"]
    assert a.view("income_stats").reduce == "_stats" and a.view("income_stats").builtin_reduce
    assert a.view("workplace_words").reduce == "_count"
    assert "rereduce" in a.view("by_year").reduce and not a.view("by_year").builtin_reduce
    assert set(a.lib) == {"util"} and "exports.words" in a.lib["util"]
    assert a.options == {"collation": "unicode", "include_design": False, "local_seq": False}
    assert a.language == "javascript" and a.name == "app"


def test_parts_that_do_not_build_the_index_are_left_out():
    body = design.load(JSON_FILE).as_couch()
    assert set(body) == {"_id", "language", "views", "options"}      # no _rev, shows, validate_doc_update
    assert body["views"]["lib"]["util"].startswith("// lower-cased words")


def test_live_url_gives_the_same_design_doc_and_masks_the_password():
    srv, seen = serve_json([(200, json.loads(JSON_FILE.read_text()))])
    try:
        port = srv.server_address[1]
        got = design.load(f"http://admin:s3cret@127.0.0.1:{port}/my%2Fdb/_design/app")
    finally:
        srv.shutdown()
    assert seen == ["/my%2Fdb/_design/app"]
    assert got.as_couch() == design.load(FOLDER).as_couch()
    assert "s3cret" not in got.source and got.source.startswith("http://admin:***@127.0.0.1")


def test_live_url_error_is_one_line_without_the_password():
    srv, _ = serve_json([(404, {"error": "not_found", "reason": "missing"})])
    try:
        with pytest.raises(UsageError) as err:
            design.load(f"http://admin:s3cret@127.0.0.1:{srv.server_address[1]}/db/_design/nope")
    finally:
        srv.shutdown()
    msg = str(err.value)
    assert "s3cret" not in msg and "404" in msg and "\n" not in msg


def test_view_subset_keeps_lib_and_options():
    d = design.load(FOLDER, design.parse_view_list("workplace_words, income_stats"))
    assert d.view_names == ["income_stats", "workplace_words"]
    assert d.lib is not None and d.options["collation"] == "unicode"
    only = d.as_couch("_design/copy", only=["income_stats"])
    assert only["_id"] == "_design/copy" and set(only["views"]) == {"income_stats", "lib"}


def test_unknown_view_names_the_known_ones():
    with pytest.raises(UsageError, match="no view 'nope'.*by_year, income_stats, workplace_words"):
        design.load(FOLDER, ["nope"])


@pytest.mark.parametrize("doc, message", [
    ([], "must be a JSON object"),
    ({"views": {"a": {"map": "function(d){}"}}}, "no _id"),
    ({"_id": "_design/x"}, "holds no views"),
    ({"_id": "_design/x", "views": {"a": {"reduce": "_sum"}}}, "view 'a' has no map"),
    ({"_id": "_design/x", "views": {"a": {"map": "f", "reduce": "_median"}}}, "unknown built-in reduce '_median'"),
    ({"_id": "_design/x", "views": {"lib": {"u": "x"}}}, "only views.lib"),
    ({"_id": "_design/x", "views": {"a": {"map": "f"}, "lib": {"u": 3}}}, "views.lib.u"),
    ({"_id": "_design/x", "views": {"a": {"map": "f"}}, "options": []}, "options must be an object"),
])
def test_bad_design_docs_say_what_and_where(doc, message):
    with pytest.raises(UsageError, match=message) as err:
        design.normalise(doc, source="x.json")
    assert str(err.value).startswith("x.json")


def test_bad_sources(tmp_path):
    with pytest.raises(UsageError, match="design doc not found"):
        design.load(tmp_path / "missing")
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  nope")
    with pytest.raises(UsageError, match=r"bad.json: not JSON \(line 2"):
        design.load(bad)
    with pytest.raises(UsageError, match="no views/ folder"):
        design.load(tmp_path)
    with pytest.raises(UsageError, match="expected URL/db/_design/name"):
        design.load("http://u:pw@127.0.0.1:1/db")


def test_folder_nested_lib_and_missing_map(tmp_path):
    app = tmp_path / "shop"
    shutil.copytree(FOLDER, app)
    (app / "views" / "lib" / "deep").mkdir()
    (app / "views" / "lib" / "deep" / "x.js").write_text("exports.x = 1;\n")
    d = design.load(app)
    assert d.name == "shop" and d.lib["deep"] == {"x": "exports.x = 1;"}
    (app / "views" / "empty").mkdir()
    with pytest.raises(UsageError, match="empty: no map.js"):
        design.load(app)
