"""A made-up dialect registered in one place (dragnet.servers.dialects.register) with a tiny query server
of its own is seen everywhere a dialect matters: discovery, view files, couchapp folders, qsbench (rows
checked against CouchDB-free python3), bench planning and the rendered qsbench report."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.servers import available, dialects, user

# "toy": a map is a field name; the server emits [doc[field], 1] for each document that has it
TOY = dialects.Dialect("toy", ".toy", "toy", "toy", noop_map="-")
TOY_SERVER = r'''
import json, sys
funs = []
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd[0] == "reset":
        funs.clear(); out = True
    elif cmd[0] == "add_fun":
        funs.append(cmd[1].strip()); out = True
    elif cmd[0] == "map_doc":
        doc = cmd[1]
        out = [[] if f == "-" or f not in doc else [[doc[f], 1]] for f in funs]
    else:
        out = True
    sys.stdout.write(json.dumps(out) + "\n"); sys.stdout.flush()
'''


@pytest.fixture
def toy(tmp_path):
    dialects.register(TOY)
    script = tmp_path / "toyqs.py"
    script.write_text(TOY_SERVER)
    available.install([f"toy={sys.executable} {script}"])
    yield script
    available.install([])
    user.use([])
    dialects.unregister("toy")


def test_a_registered_dialect_cannot_replace_a_built_in_one():
    with pytest.raises(ValueError, match="built-in"):
        dialects.register(dialects.Dialect("es5", ".es5", "js"))
    with pytest.raises(ValueError, match="built-in"):
        dialects.register(dialects.Dialect("mine", ".py", "python"))


def test_discovery_and_view_files_read_the_record(toy, tmp_path):
    from dragnet.index import design, views
    from dragnet.servers.discovery import DIALECT_FILES

    assert DIALECT_FILES["toy"] == "map.toy" and "map.toy" in design.map_files()
    specs, _ = available.discover()
    (spec,) = [s for s in specs if s.name == "toy"]
    assert (spec.dialect, dialects.family(spec.dialect)) == ("toy", "toy")
    from dragnet.qsbench import ddoc

    assert ddoc.server_family(spec) == "toy" and dialects.noop_map(ddoc.server_family(spec)) == "-"   # qsbench --ddoc
    r = CliRunner().invoke(main, ["servers", "--server", f"toy={sys.executable} {toy}"])
    assert r.exit_code == 0, r.output
    assert any(line.split()[:1] == ["toy"] for line in r.output.splitlines()), r.output
    f = tmp_path / "map.toy"
    f.write_text("kind\n")
    assert dialects.from_filename(str(f)) is TOY
    v = views.load(f)
    assert (v.language, v.dialect) == ("toy", "toy")
    # a couchapp folder whose view is only map.toy
    app = tmp_path / "app"
    (app / "views" / "kinds").mkdir(parents=True)
    (app / "views" / "kinds" / "map.toy").write_text("kind\n")
    (app / "language").write_text("toy\n")
    d = design.load(str(app))
    assert d.doc["views"]["kinds"]["map"] == "kind\n" and d.doc["language"] == "toy"
    dialects.unregister("toy")
    assert "map.toy" not in design.map_files() and "toy" not in DIALECT_FILES


def test_bench_plans_the_new_dialects_language_without_couchdb(toy, tmp_path):
    from dragnet.bench import run as b

    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "map.toy").write_text("kind\n")
    (spec,) = b.resolve_languages(["toy"], folder)
    assert (spec.language, spec.path(folder).name) == ("toy", "map.toy")
    assert b.user_languages(["toy"], folder) == (["toy"], [])
    p = b.plan(["toy"], 2, ["disk"])
    assert [r.language for r in p] == ["erlang_baseline", "toy"] * 2


def test_qsbench_runs_the_new_dialect_and_its_rows_match_python(toy, tmp_path):
    folder = tmp_path / "kinds"
    folder.mkdir()
    (folder / "map.toy").write_text("kind\n")
    (folder / "map.py").write_text("def fun(doc):\n    if 'kind' in doc:\n        yield doc['kind'], 1\n")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"_id": f"d{i:03d}", **({"kind": f"k{i % 3}"} if i % 4 else {})}) + "\n"
                            for i in range(40)))
    args = ["qsbench", "--docs", str(docs), "--view", str(folder), "--server", f"toy={sys.executable} {toy}",
            "--servers", "python3,toy", "--reference", "python3", "--repeat", "1", "--warmup", "0"]
    r = CliRunner().invoke(main, args + ["--results", str(tmp_path / "res"), "--json"])
    assert r.exit_code == 0, r.output
    got = {s["name"]: s for s in json.loads(r.stdout)["servers"]}
    assert got["toy"]["status"] == "ok" and got["toy"]["mismatch_count"] == 0
    assert got["toy"]["docs_per_sec"] > 0
    # the rendered report has the new server's row
    r = CliRunner().invoke(main, args + ["--results", str(tmp_path / "res2")])
    assert r.exit_code == 0, r.output
    assert any(line.split()[:1] == ["toy"] for line in r.output.splitlines()), r.output


def test_the_report_renders_the_new_dialects_builds(toy, tmp_path):
    """`dragnet report` over builds of the toy language beside python's: its own row and place in the ranking."""
    from test_report_design import result
    from dragnet.results.schema import write

    folder = tmp_path / "results"
    folder.mkdir()
    for i, (lang, wall) in enumerate([("toy", 2.0), ("python", 4.0)] * 3):
        write(folder / f"r{i}.json", result(lang, wall + i * 0.01, repeat=i // 2, start=100 + i * 10))
    out = CliRunner().invoke(main, ["report", str(folder), "--format", "markdown"])
    assert out.exit_code == 0, out.output
    rows = [line for line in out.output.splitlines() if line.startswith("|")]
    assert any("| toy " in r for r in rows) and any("| python " in r for r in rows), out.output
    assert "toy > python" in out.output and "toy vs python: ×1.9" in out.output, out.output   # half the time


def test_a_dialects_record_guesses_its_servers_and_names_its_fallbacks(tmp_path):
    from dragnet.servers.discovery import guess_dialect

    mine = dialects.Dialect("toyes", ".toyes", "js", "javascript", fallbacks=("es2015", "es5"),
                            guess=lambda language, exe, words: "toyengine" in words)
    assert guess_dialect("javascript", ["/opt/bin/toyengine-qs"]) == "es5"      # not registered: no record
    dialects.register(mine)
    try:
        assert guess_dialect("javascript", ["/opt/bin/toyengine-qs"]) == "toyes"
        assert guess_dialect("javascript", ["/usr/bin/couchjs", "main.js"]) == "es5"   # the others unchanged
        (tmp_path / "map.js").write_text("function (doc) { emit(doc._id, 1); }")
        assert dialects.map_file(tmp_path, "toyes") == tmp_path / "map.js"
        (tmp_path / "map.es6.js").write_text("(doc) => emit(doc._id, 1)")
        assert dialects.map_file(tmp_path, "toyes") == tmp_path / "map.es6.js"   # in the record's order
        (tmp_path / "map.toyes").write_text("x")
        assert dialects.map_file(tmp_path, "toyes") == tmp_path / "map.toyes"    # its own file first
    finally:
        dialects.unregister("toyes")


def test_an_es2015_engine_takes_a_views_folder_with_only_map_js(tmp_path):
    from dragnet.bench import run as b
    from dragnet.qsbench.run import load_view

    (tmp_path / "map.js").write_text("function (doc) { if (doc.name) { emit(doc.name, 1); } }\n")
    bun = b.LANGUAGES.get("bun") or next(s for s in b.LANGUAGES.values() if s.view_file == "map.es6.js")
    assert bun.view_file == "map.es6.js" and bun.path(tmp_path) == tmp_path / "map.js"
    assert b.resolve_languages([bun.name], tmp_path)[0].path(tmp_path) == tmp_path / "map.js"
    assert "emit(doc.name" in load_view(str(tmp_path), "es2015").map_source
