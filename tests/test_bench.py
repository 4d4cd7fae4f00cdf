"""`dragnet bench`: planning, interleaving and ratios (pure), and a small end-to-end run on a live CouchDB."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.bench import run as bench
from dragnet.axes import model as model
from dragnet.data import ensure as ensure
from dragnet.cli import main
from dragnet.errors import UsageError


# ---- languages

def test_language_files_exist_in_the_repo():
    specs = bench.resolve_languages(list(bench.LANGUAGES), bench.DEFAULT_VIEWS)
    paths = {s.name: s.path(bench.DEFAULT_VIEWS) for s in specs}
    assert paths["erlang_baseline"] == bench.REPO / "views" / "baseline" / "map.erl"
    assert paths["javascript_quickjs_es2015"].name == "map.es6.js"
    assert bench.LANGUAGES["javascript_quickjs_es2015"].language == "javascript_quickjs"
    assert paths["python"].name == paths["pypy3"].name == "map.py"
    assert paths["chakra"].name == "map.es6.js"


def test_unknown_languages_and_missing_files_reported_together(tmp_path):
    (tmp_path / "map.js").write_text("function (doc) {}")
    with pytest.raises(UsageError) as exc:
        bench.resolve_languages(["javascript", "cobol", "python"], tmp_path)
    msg = str(exc.value)
    assert "unknown language 'cobol'" in msg and "python: view file" in msg and "map.py not found" in msg


def test_parse_list():
    assert model.parse_list(" disk, tmpfs ,", "--storage") == ["disk", "tmpfs"]
    with pytest.raises(UsageError, match="'disk' given twice"):
        model.parse_list("disk,disk", "--storage")


# ---- plan

def test_plan_interleaves_languages_with_baseline_first_in_every_repeat():
    p = bench.plan(["javascript", "python"], 3, ["disk", "tmpfs"])
    assert [x.index for x in p] == list(range(18))
    seq = [x.language for x in p]
    assert seq[:6] == ["erlang_baseline", "javascript", "python"] * 2
    assert seq == ["erlang_baseline", "javascript", "python"] * 6
    assert [(x.storage, x.repeat) for x in p[:3]] == [("disk", 0)] * 3
    assert [(x.storage, x.repeat) for x in p[9:12]] == [("tmpfs", 0)] * 3
    # every (storage, repeat) holds exactly one baseline, before the other languages
    for st in ("disk", "tmpfs"):
        for r in range(3):
            chunk = [x.language for x in p if x.storage == st and x.repeat == r]
            assert chunk[0] == "erlang_baseline" and chunk.count("erlang_baseline") == 1


def test_plan_baseline_given_or_disabled():
    assert [x.language for x in bench.plan(["python", "erlang_baseline"], 1, ["disk"])] == \
        ["erlang_baseline", "python"]
    assert [x.language for x in bench.plan(["python"], 2, ["unknown"], baseline=False)] == ["python", "python"]
    with pytest.raises(UsageError, match="at least 1"):
        bench.plan(["python"], 0, ["disk"])


# ---- ratios

def _run(i, st, r, lang, dps, status="ok"):
    return {"index": i, "storage": st, "repeat": r, "language": lang, "status": status, "docs_per_sec_wall": dps}


def test_ratios_pair_with_the_baseline_of_the_same_storage_and_repeat():
    runs = [_run(0, "disk", 0, "erlang_baseline", 1000.0), _run(1, "disk", 0, "javascript", 700.0),
            _run(2, "disk", 1, "erlang_baseline", 800.0), _run(3, "disk", 1, "javascript", 720.0),
            _run(4, "tmpfs", 0, "erlang_baseline", 500.0), _run(5, "tmpfs", 0, "javascript", 400.0),
            _run(6, "tmpfs", 1, "erlang_baseline", 0, status="error"), _run(7, "tmpfs", 1, "javascript", 410.0),
            _run(8, "disk", 1, "python", None, status="error")]
    got = bench.ratios(runs)
    assert got[0] == 1.0 and got[1] == 700.0 / 1000.0
    assert got[3] == 720.0 / 800.0          # repeat 1 uses repeat 1's baseline, not repeat 0's
    assert got[5] == 400.0 / 500.0          # storages are not mixed
    assert got[7] is None                   # its baseline failed
    assert got[6] is None and got[8] is None


# ---- data marker

def test_import_needed():
    fp = {"sha256": "abc", "count": 10, "file": "d.jsonl"}
    marker = {"sha256": "abc", "count": 10, "doc_count": 10, "file": "d.jsonl"}
    assert ensure.import_needed(None, None, fp) == "the database does not exist"
    assert "not imported by dragnet" in ensure.import_needed(None, {"doc_count": 10}, fp)
    assert "another data file" in ensure.import_needed({**marker, "sha256": "zzz"}, {"doc_count": 10}, fp)
    assert "another data file" in ensure.import_needed({**marker, "count": 9}, {"doc_count": 10}, fp)
    assert "holds 9 documents, 10 after the import" in ensure.import_needed(marker, {"doc_count": 9}, fp)
    assert ensure.import_needed(marker, {"doc_count": 10}, fp) is None
    assert ensure.import_needed(marker, {"doc_count": 11}, fp) is None  # e.g. a design doc left behind


def test_file_fingerprint_reads_gzip_and_plain(tmp_path):
    lines = "".join(json.dumps({"_id": f"d{i}"}) + "\n" for i in range(5)) + "\n"
    plain, gz = tmp_path / "d.jsonl", tmp_path / "d.jsonl.gz"
    plain.write_text(lines)
    with gzip.open(gz, "wt") as fh:
        fh.write(lines)
    assert ensure.file_fingerprint(plain)["count"] == ensure.file_fingerprint(gz)["count"] == 5
    assert ensure.file_fingerprint(plain)["sha256"] != ensure.file_fingerprint(gz)["sha256"]
    with pytest.raises(UsageError, match="data file not found"):
        ensure.file_fingerprint(tmp_path / "missing.jsonl")


def test_db_tasks_matches_shards_of_the_db_only():
    tasks = [{"type": "indexer", "database": "shards/00000000-1fffffff/decl.1795257200"},
             {"type": "view_compaction", "database": "shards/e0000000-ffffffff/decl.1795257200"},
             {"type": "indexer", "database": "shards/00000000-1fffffff/decl2.1795257200"},
             {"type": "database_compaction", "database": "decl"},
             {"type": "replication", "source": "http://x/other"}]
    assert len(bench.db_tasks(tasks, "decl")) == 3


# ---- CLI input checks (no server needed)

def test_cli_bad_input(tmp_path):
    r = CliRunner().invoke(main, ["bench", "--db", "x", "--languages", "javascript,cobol",
                                  "--url", "http://127.0.0.1:1", "--results", str(tmp_path / "r")])
    assert r.exit_code == 2 and "unknown language 'cobol'" in r.output
    r = CliRunner().invoke(main, ["bench", "--db", "x", "--storage", "disk,ssd", "--url", "http://127.0.0.1:1"])
    assert r.exit_code == 2 and "--storage ssd: expected disk or tmpfs" in r.output
    r = CliRunner().invoke(main, ["bench", "--db", "x", "--storage", "disk,tmpfs", "--url", "http://127.0.0.1:1",
                                  "--results", str(tmp_path / "r")], env={"DRAGNET_STATE_DIR": str(tmp_path)})
    assert r.exit_code == 2 and "needs a CouchDB started by `dragnet couch up`" in r.output


# ---- live: a small real bench, then the report

def _data(path: Path, count: int) -> Path:
    from data_prep.generate import declaration_lines

    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for line in declaration_lines(count, 7):
            fh.write(line.rstrip("\n") + "\n")
    return path


@pytest.mark.live
@pytest.mark.slow
def test_live_bench_then_report(live_db, tmp_path):
    couch, db = live_db
    url = __import__("os").environ["DRAGNET_TEST_COUCHDB_URL"]
    data = _data(tmp_path / "d.jsonl.gz", 2000)
    out = tmp_path / "bench"
    args = ["bench", "--url", url, "--db", db, "--data", str(data), "--languages", "javascript",
            "--repeat", "2", "--results", str(out), "--q", "2", "--storage-label", "disk", "--json", "--no-ceiling"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output.strip().splitlines()[-1])
    manifest = json.loads((out / "bench.json").read_text())
    assert [x["language"] for x in manifest["runs"]] == ["erlang_baseline", "javascript"] * 2
    assert all(x["status"] == "ok" for x in manifest["runs"]), manifest["runs"]
    assert manifest["imports"][0]["imported"] is True and manifest["imports"][0]["count"] == 2000
    for x in manifest["runs"]:
        res = json.loads((out / x["result_file"]).read_text())
        assert res["bench"]["language"] == x["language"] and res["storage"] == "disk"
        assert res["summary"]["docs_per_sec_wall"] == x["docs_per_sec_wall"]
    base = {x["repeat"]: x for x in manifest["runs"] if x["language"] == "erlang_baseline"}
    for x in manifest["runs"]:
        assert x["ratio_to_baseline"] == pytest.approx(x["docs_per_sec_wall"] / base[x["repeat"]]["docs_per_sec_wall"])
    # the design docs are gone and no task of the db is left
    assert couch.get(f"/{db}/_design_docs")["rows"] == []
    assert bench.db_tasks(couch.get("/_active_tasks"), db) == []
    assert {(g["label"], g["n"]) for g in doc["report"]["groups"]} == {("erlang_baseline", 2), ("javascript", 2)}

    # the next bench skips the import (same file, same count)
    again = ensure.ensure_data(couch, db, data)
    assert again["imported"] is False and again["reason"] == "already imported"

    r = CliRunner().invoke(main, ["report", str(out), "--format", "markdown", "--plot", str(tmp_path / "png")])
    assert r.exit_code == 0, r.output
    assert "| javascript | disk | 2 |" in r.output and "| erlang_baseline | disk | 2 |" in r.output
    assert (tmp_path / "png" / "rate_over_time.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_bench_starts_local_couchdb_on_disk_and_tmpfs_then_report(tmp_path):
    """`bench --backend local --storage disk,tmpfs`: dragnet starts the release, builds every run on both
    storages, stops it, and `report` groups the runs (needs DRAGNET_COUCHDB_HOME, a CouchDB release)."""
    import os

    from conftest import couch_env, free_port

    from dragnet.couchdb import control as ctl

    home = os.environ.get("DRAGNET_COUCHDB_HOME")
    if not home or not (Path(home) / "bin" / "couchdb").exists():
        pytest.skip("no CouchDB release (set DRAGNET_COUCHDB_HOME to a dir with bin/couchdb)")
    if not Path("/dev/shm").is_dir():
        pytest.skip("no tmpfs at /dev/shm")
    env = couch_env(tmp_path, "bench-secret-7")
    env["DRAGNET_COUCHDB_HOME"] = home
    port = free_port()
    data = _data(tmp_path / "d.jsonl.gz", 300)
    out = tmp_path / "bench"
    args = ["bench", "--url", f"http://127.0.0.1:{port}", "--db", "decl", "--data", str(data),
            "--languages", "javascript,python3", "--repeat", "2", "--storage", "disk,tmpfs", "--backend", "local",
            "--q", "2", "--results", str(out), "--json", "--no-ceiling"]
    r = CliRunner().invoke(main, args, env=env)
    try:
        assert r.exit_code == 0, r.output
        assert "bench-secret-7" not in r.output
        manifest = json.loads((out / "bench.json").read_text())
        runs = manifest["runs"]
        assert [(x["storage"], x["language"]) for x in runs] == \
            [(s, lang) for s in ("disk", "tmpfs") for _ in range(2) for lang in ("erlang_baseline", "javascript",
                                                                             "python3")]
        assert all(x["status"] == "ok" for x in runs), runs
        for x in runs:
            res = json.loads((out / x["result_file"]).read_text())
            assert res["storage"] == x["storage"] and res["summary"]["docs"] >= 300
            assert "bench-secret-7" not in json.dumps(res)
        # the CouchDB the bench started is gone again
        assert ctl.load_state(port, env) is None and not ctl.port_in_use(port)
    finally:
        CliRunner().invoke(main, ["couch", "down", "--port", str(port), "--purge"], env=env)

    r = CliRunner().invoke(main, ["report", str(out), "--format", "markdown"])
    assert r.exit_code == 0, r.output
    for storage in ("disk", "tmpfs"):
        for lang in ("erlang_baseline", "javascript", "python3"):
            assert f"| {lang} | {storage} | 2 |" in r.output


def test_the_ceiling_opens_each_round_after_the_baseline_unless_asked_not_to(tmp_path):
    langs = bench.with_ceiling(["javascript", "bun"])
    assert langs == ["ceiling", "javascript", "bun"]
    assert bench.with_ceiling(["javascript", "ceiling"]) == ["javascript", "ceiling"]
    assert bench.with_ceiling(["javascript"], ceiling=False) == ["javascript"]
    order = [p.language for p in bench.plan(langs, 2, ["disk"])]
    assert order == ["erlang_baseline", "ceiling", "javascript", "bun"] * 2
    # it never reads its view file: a folder without map.js still has one for it
    (tmp_path / "map.py").write_text("def fun(doc):\n    yield doc['_id'], None\n")
    assert bench.LANGUAGES["ceiling"].path(tmp_path) == tmp_path / "map.py"
    assert bench.resolve_languages(["ceiling"], tmp_path)[0].language == "ceiling"


def test_a_couchdb_without_the_ceiling_is_said_once_and_its_runs_set_aside(tmp_path):
    events = []
    b = bench.Bench(bench.BenchConfig(url="http://127.0.0.1:1", db="d", languages=["javascript"],
                                      results_dir=str(tmp_path)), on_event=lambda k, d: events.append((k, d)))
    b.manifest = {"runs": []}
    # CouchDB 3.5.0's answer to a view of a language it has no server for, as a bench run records it
    run = {"language": "ceiling", "status": "error", "error": "CouchDB answered 500 to GET /s/_design/x/_view/v?"
                                                              "limit=1: unknown_query_language: ceiling"}
    b._note_ceiling_refused(run)
    assert run["status"] == "not_applicable" and "unknown_query_language" in run["error"]
    assert b.ceiling_refused and b.manifest["ceiling"] == b.ceiling_refused
    assert [k for k, _ in events] == ["warning"]
    other = {"language": "javascript", "status": "error", "error": "unknown_query_language: javascript"}
    b._note_ceiling_refused(other)
    assert other["status"] == "error" and len(events) == 1
