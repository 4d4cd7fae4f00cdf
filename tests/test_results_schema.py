"""The results schema: files of every age load through the one reader, newer versions and broken files are
refused with the file and the place named, and the typed records read the figures the files hold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.results import schema as rs
from dragnet.results.record import Build, axes_of
from dragnet.cli import main
from dragnet.qsbench.run import Run, ShardRun
from dragnet.results.addview_results import from_recording, read_results

BENCH = Path(__file__).parent / "fixtures" / "scenario-bench"   # a committed bench (scenarios, size sweep)
RESULT = BENCH / "000-disk-mem-160.0MiB_unlimited_cold-r0-erlang_baseline.json"


def test_committed_bench_files_load_and_type():
    manifest = rs.read(BENCH / "bench.json", rs.BENCH)
    raw = json.loads(RESULT.read_text())
    build = Build.of(rs.read(RESULT, rs.ADDVIEW))
    assert build.wall_s == raw["summary"]["wall_time_s"]
    assert build.docs_per_s == raw["summary"]["docs_per_sec_wall"]
    assert build.status == "ok"
    # written before bench.axes: the axes come from the old fields
    assert build.axes == {"language": "erlang_baseline", "storage": "disk",
                          "scenario": "mem-160.0MiB/unlimited/cold", "size": 20000}
    entries = [Build.of_entry(r) for r in manifest["runs"]]
    assert {e.status for e in entries} == {"ok", "oom"}
    assert [e.timed for e in entries] == [r["status"] == "ok" and bool(r["wall_time_s"]) for r in manifest["runs"]]


def test_recorded_build_loads(fixtures_dir, tmp_path):
    # the oldest kind of result: a harness recording turned into a results file, no bench section at all
    path = rs.write(tmp_path / "rec.json", from_recording(fixtures_dir / "javascript"))
    build = Build.of(read_results(path))
    meta = json.loads((fixtures_dir / "javascript" / "meta.json").read_text())
    assert build.wall_s == pytest.approx(meta["wall_s"])
    assert build.axes["language"] == "javascript" and build.axes["storage"] == "disk"


def test_axes_are_read_when_present():
    result = {"bench": {"language": "old", "axes": {"language": "javascript", "cpus": "2"}}}
    assert axes_of(result) == {"language": "javascript", "cpus": "2"}


def test_docs_per_sec_recomputed_for_files_without_it():
    s = Build.of({"summary": {"docs": 1000, "wall_time_s": 4.0, "ok": True}})
    assert s.docs_per_s == 250.0   # the one docs/s: recomputed where the file holds none
    assert Build.of({"summary": {"error": "boom"}}).ok is False
    assert Build.of({"summary": {"ok": False, "oom_killed": True}}).status == "oom"


def test_newer_schema_version_is_refused_naming_it(tmp_path):
    data = json.loads(RESULT.read_text())
    data["schema"] = "dragnet.addview/7"
    path = rs.write(tmp_path / "new.json", data)
    with pytest.raises(rs.ResultsFileError, match=r"new.json: schema 'dragnet.addview/7' is newer than this dragnet "
                                                  r"reads \('dragnet.addview/1'\)"):
        read_results(path)
    # report refuses it too, also when it is found in a folder rather than silently skipping it
    r = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "'dragnet.addview/7' is newer" in r.output


def test_truncated_and_corrupt_files_are_named_with_the_place(tmp_path):
    text = RESULT.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    line = text[: len(text) // 2].count("\n") + 1
    with pytest.raises(rs.ResultsFileError, match=rf"cut.json: not valid JSON, truncated \(the file ends at line "
                                                  rf"{line}; .*: line \d+ column \d+\)"):
        read_results(cut)
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace('"kind"', '"kind" 1', 1))
    with pytest.raises(rs.ResultsFileError, match=r"bad.json: not valid JSON, broken at line \d+ column \d+"):
        read_results(bad)
    r = CliRunner().invoke(main, ["report", str(tmp_path / "cut.json")])
    assert r.exit_code == 2 and f"cut.json: not valid JSON, truncated (the file ends at line {line}" in r.output


def test_other_kinds_are_refused(tmp_path):
    with pytest.raises(rs.ResultsFileError, match=r"bench.json: not a dragnet addview results file "
                                                  r"\(schema 'dragnet.bench/1'"):
        read_results(BENCH / "bench.json")


def test_write_is_atomic_and_round_trips(tmp_path):
    copy = tmp_path / "r.json"
    shutil.copy(RESULT, copy)
    data = rs.read(copy)
    out = rs.write(tmp_path / "sub" / "w.json", data)
    assert rs.read(out) == data
    assert [p.name for p in out.parent.iterdir()] == ["w.json"]


def test_qsbench_run_round_trips():
    run = Run(3, False, [ShardRun(0, 10, 123, 5, 1000, 10, [100] * 10, 0.5, 2048, 1),
                         ShardRun(1, 12, 124, 6, 3000, 0, [250] * 12, 0.25, 1024, 0)])
    again = rs.QsbenchRun.from_dict(json.loads(json.dumps(run.as_dict())))
    assert (again.docs, again.wall_ns, again.cpu_s, again.peak_rss_kb) == (22, 3000, 0.75, 2048)
    doc = {"schema": rs.schema(rs.QSBENCH), "servers": [{"name": "chakra", "runs": [run.as_dict()]},
                                                         {"name": "bun", "status": "skipped", "runs": []}]}
    assert {k: [r.docs for r in v] for k, v in rs.qsbench_runs(doc).items()} == {"chakra": [22]}


DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_committed_results_file_under_docs_loads():
    files = sorted(DOCS.rglob("*.json"))
    kinds = {}
    for f in files:
        raw = json.loads(f.read_text())
        if rs.kind_of(raw) not in rs.VERSIONS:
            # design docs, Mango index lists, and outputs of forecast/compare (schemas of their own)
            continue
        data = rs.read(f)        # each is some dragnet results file of a version this dragnet reads
        kinds[rs.kind_of(data)] = kinds.get(rs.kind_of(data), 0) + 1
        if rs.kind_of(data) == rs.ADDVIEW:
            raw = data["summary"]
            build = Build.of(data)
            assert build.wall_s == raw.get("wall_time_s")
            assert build.axes.get("language")
        elif rs.kind_of(data) == rs.BENCH:
            for run in data["runs"]:
                assert Build.of_entry(run).wall_s == run.get("wall_time_s")
    assert kinds.get(rs.ADDVIEW) and kinds.get(rs.BENCH), kinds


def test_couchdb_versions_read_from_either_recorded_shape():
    raw = {"couchdb": {"version": "3.5.0", "node_versions": {"erlang": {"version": "25.2.3"},
                                                             "javascript_engine": {"name": "spidermonkey",
                                                                                   "version": "102"}}}}
    flat = {"couchdb": {"version": "3.5.2", "versions": {"couchdb": "3.5.2", "erlang": "27.3",
                                                         "javascript_engine": "spidermonkey 128"}}}
    assert rs.couchdb_versions(raw) == {"couchdb": "3.5.0", "erlang": "25.2.3", "javascript_engine": "spidermonkey 102"}
    assert rs.couchdb_versions(flat) == {"couchdb": "3.5.2", "erlang": "27.3", "javascript_engine": "spidermonkey 128"}
    assert rs.couchdb_versions({}) == {"couchdb": None, "erlang": None, "javascript_engine": None}


def test_kept_is_the_file_or_its_gzipped_twin_where_only_that_exists(tmp_path):
    import gzip

    from dragnet.results import schema

    plain, gz = tmp_path / "sizes.json", tmp_path / "sizes.json.gz"
    assert schema.kept(plain) == plain                     # neither: the name asked for, for its error
    gz.write_bytes(gzip.compress(b'{"a": 1}'))
    assert schema.kept(plain) == gz and schema.read_json(schema.kept(plain)) == {"a": 1}
    plain.write_text('{"a": 2}')                            # written back plain: that one is read
    assert schema.kept(plain) == plain and schema.read_json(schema.kept(plain)) == {"a": 2}
