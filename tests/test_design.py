"""Design documents as input: the three forms give one normalised document; bad input says where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dragnet.index import design as design
from dragnet.errors import UsageError

APP = Path(__file__).resolve().parent / "ddocs" / "app"
APP_JSON = APP.with_suffix(".json")


def test_folder_and_json_file_give_the_same_document():
    folder, file = design.load(str(APP)), design.load(str(APP_JSON))
    assert folder.doc == file.doc
    assert folder.view_names == ["by_year", "income_by_person", "name_words"]
    assert folder.reduce_of("by_year") == "_stats"
    assert "rereduce" in folder.reduce_of("income_by_person")
    assert folder.reduce_of("name_words") is None
    assert "exports.words" in folder.doc["views"]["lib"]["util"] and folder.has_lib()
    assert folder.doc["options"] == {"include_design": False, "local_seq": False}
    # what does not take part in indexing is dropped, and said so
    assert file.dropped == ["shows", "validate_doc_update"] and "_rev" not in file.doc


def test_select_keeps_lib_and_refuses_unknown_views():
    d = design.load(str(APP), views=["name_words"])
    assert d.view_names == ["name_words"] and d.has_lib()
    with pytest.raises(UsageError, match=r"no view 'nope' \(it has by_year, income_by_person, name_words\)"):
        design.load(str(APP), views=["nope"])


def test_benchmark_copy_is_fresh_and_leaves_the_original_alone():
    d = design.load(str(APP))
    before = json.dumps(d.doc, sort_keys=True)
    copy = design.benchmark_copy(d, "_design/dragnet_x", language="chakra", nonce="n1")
    assert copy["_id"] == "_design/dragnet_x" and copy["language"] == "chakra" and copy["autoupdate"] is False
    assert copy["options"] == {"include_design": False, "local_seq": False, "dragnet_benchmark": "n1"}
    assert copy["views"]["lib"] == d.doc["views"]["lib"]
    assert json.dumps(d.doc, sort_keys=True) == before


@pytest.mark.parametrize("doc, message", [
    ([], "must be a JSON object"),
    ({"_id": "app", "views": {"v": {"map": "f"}}}, "_id must be '_design/<name>'"),
    ({"_id": "_design/a", "views": {}}, "no views"),
    ({"_id": "_design/a", "views": {"lib": {"x": "1"}}}, "no views"),
    ({"_id": "_design/a", "views": {"v": {"reduce": "_sum"}}}, "view 'v' has no map function"),
    ({"_id": "_design/a", "views": {"v": {"map": "f", "reduce": "_median"}}}, "unknown built-in reduce '_median'"),
    ({"_id": "_design/a", "views": {"v": {"map": "f", "reduce": 3}}}, "reduce must be a function"),
    ({"_id": "_design/a", "views": {"v": {"map": "f"}, "lib": {"m": 1}}}, r"views.lib.m: a module must be a string"),
    ({"_id": "_design/a", "language": 5, "views": {"v": {"map": "f"}}}, "language must be a non-empty string"),
])
def test_bad_documents_are_refused_with_where(tmp_path, doc, message):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=message) as exc:
        design.load(str(path))
    assert str(exc.value).startswith(str(path))


def test_malformed_json_names_file_and_line(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"_id": "_design/a",\n "views": {,}}')
    with pytest.raises(UsageError, match=r"d.json: not valid JSON: .* at line 2"):
        design.load(str(path))


def test_couchapp_folder_errors(tmp_path):
    with pytest.raises(UsageError, match="no views/ folder"):
        design.from_folder(tmp_path)
    (tmp_path / "views" / "v").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"views/v: no map function"):
        design.from_folder(tmp_path)
    (tmp_path / "views" / "v" / "map.js").write_text("function (doc) { emit(1, 1); }")
    d = design.from_folder(tmp_path)
    assert d.id == f"_design/{tmp_path.name}" and d.language == "javascript"
    with pytest.raises(UsageError, match="no such file or folder"):
        design.load(str(tmp_path / "missing"))


def test_ddoc_urls_are_split_and_never_shown_with_the_password():
    assert design.split_ddoc_url("http://u:p%40ss@h:5984/my%2Fdb/_design/app") == \
        ("http://u:p%40ss@h:5984", "my/db", "app")
    assert design.split_ddoc_url("https://h/couch/db/_design/a")[0] == "https://h/couch"
    with pytest.raises(UsageError) as exc:
        design.split_ddoc_url("http://u:secret@h:5984/db/app")
    assert "secret" not in str(exc.value) and "u:***@h:5984" in str(exc.value)


def _app(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / "app"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_couchapp_code_and_json_macros_are_expanded(tmp_path):
    root = _app(tmp_path, {
        "views/lib/comments.js": "// !code helpers/md5.js\nexports.h = function (s) { return hex_md5(s); };\n",
        "helpers/md5.js": "// !code helpers/inner.js\nfunction hex_md5(s) { return inner(s); }\n",
        "helpers/inner.js": "function inner(s) { return s.length; }\n",
        "views/by_tag/map.js": "function (doc) {\n  // !json settings.tags\n  emit(settings.tags.first, null);\n}\n",
        "settings/tags.json": '{"first": "couchdb"}',
    })
    d = design.load(str(root))
    lib = d.doc["views"]["lib"]["comments"]
    assert "function inner(s)" in lib and "function hex_md5(s)" in lib and "!code" not in lib
    m = d.doc["views"]["by_tag"]["map"]
    assert 'settings.tags = {"first": "couchdb"};' in m and "var settings = settings || {};" in m


def test_couchapp_macro_naming_a_missing_file_says_where(tmp_path):
    root = _app(tmp_path, {"views/v/map.js": "// !code helpers/nope.js\nfunction (doc) { emit(1, 1); }\n"})
    with pytest.raises(UsageError, match=r"views/v/map.*!code helpers/nope.js: no such file"):
        design.load(str(root))


def test_couchapp_macro_including_itself_is_refused(tmp_path):
    root = _app(tmp_path, {"views/v/map.js": "// !code a.js\nfunction (doc) {}\n", "a.js": "// !code a.js\n"})
    with pytest.raises(UsageError, match="includes itself"):
        design.load(str(root))


def test_a_maps_only_copy_keeps_the_maps_lib_and_built_in_reduces():
    from dragnet.index import design as dsg

    doc = {"_id": "_design/app", "language": "javascript", "options": {"local_seq": True},
           "validate_doc_update": "function(){}", "shows": {"s": "function(){}"},
           "views": {"lib": {"u": "exports.x = 1"}, "a": {"map": "m1", "reduce": "_sum"},
                     "b": {"map": "m2", "reduce": "function(k, v) { return sum(v); }"}, "c": {"map": "m3"}}}
    copy = dsg.benchmark_copy(dsg.Design(doc, "app.json"), "_design/x", language="ceiling", nonce="n",
                              maps_only=True)
    assert copy["views"] == {"lib": {"u": "exports.x = 1"}, "a": {"map": "m1", "reduce": "_sum"}, "b": {"map": "m2"},
                             "c": {"map": "m3"}}
    assert "validate_doc_update" not in copy and "shows" not in copy
    assert copy["language"] == "ceiling" and copy["autoupdate"] is False
    assert copy["options"] == {"local_seq": True, "dragnet_benchmark": "n"}


def test_a_nouveau_section_is_kept_beside_the_views_not_in_their_copy(tmp_path):
    doc = json.loads(APP_JSON.read_text())
    doc["nouveau"] = {"names": {"index": "function (doc) { index('text', 'name', doc.name); }"}}
    f = tmp_path / "search.json"
    f.write_text(json.dumps(doc))
    d = design.load(str(f))
    assert d.nouveau == doc["nouveau"] and "nouveau" not in d.dropped and "nouveau" not in d.doc
    # the views' build is the same with or without the search index beside them
    assert design.benchmark_copy(d, "_design/x", nonce="n") == design.benchmark_copy(design.load(str(APP_JSON)),
                                                                                     "_design/x", nonce="n")
    # a couchapp folder keeps nouveau/<name>/index.js as views/<name>/map.js
    folder = tmp_path / "app"
    (folder / "views" / "v").mkdir(parents=True)
    (folder / "views" / "v" / "map.js").write_text("function (doc) { emit(doc._id, 1); }")
    (folder / "nouveau" / "names").mkdir(parents=True)
    (folder / "nouveau" / "names" / "index.js").write_text(doc["nouveau"]["names"]["index"])
    assert design.load(str(folder)).nouveau == doc["nouveau"]


def test_a_bad_nouveau_section_is_one_line_naming_the_file(tmp_path):
    doc = json.loads(APP_JSON.read_text())
    doc["nouveau"] = {"names": {"analyzer": "standard"}}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=rf"^{f}: nouveau must be "):
        design.load(str(f))
