"""The kernel's split of a short build on a real CouchDB: a build of a few hundred small documents (well
under 2 s, where pidstat's 1 s samples saw next to nothing) is divided into query servers, beam, helpers,
other programs and idle, which fill its interval × cores. Needs DRAGNET_TEST_COUCHDB_URL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.measure import cpu
from dragnet.report import share as sh

MAP = "// dragnet: language=javascript\nfunction (doc) {\n  emit(doc._id, doc.type);\n}\n"


@pytest.mark.live
def test_live_short_build_is_split_from_the_kernels_accounting(live_url, live_db, tmp_path):
    _couch, db = live_db
    (tmp_path / "views").mkdir()
    (tmp_path / "views" / "map.js").write_text(MAP)
    data = tmp_path / "small.jsonl"
    data.write_text("".join(json.dumps({"_id": f"d{i:05d}", "type": "abc"[i % 3], "n": i}) + "\n" for i in range(300)))
    out = tmp_path / "b"
    r = CliRunner().invoke(main, ["bench", "--url", live_url, "--db", db, "--data", str(data), "--views",
                                  str(tmp_path / "views"), "--languages", "javascript", "--repeat", "1",
                                  "--no-baseline", "--no-ceiling", "--results", str(out)])
    assert r.exit_code == 0, r.output
    (run,) = json.loads((out / "bench.json").read_text())["runs"]
    res = json.loads((out / run["result_file"]).read_text())
    rec = res["cpu"]
    if rec is None:
        pytest.skip("the live CouchDB is not on this machine: no process accounting")
    s = sh.split_of(res)
    assert isinstance(s, cpu.CoreTime), s
    assert s.other_s is not None and s.cores == rec["cores"] > 0
    assert sum(s.seconds().values()) == pytest.approx(rec["interval_s"] * rec["cores"])
    assert s.beam_s > 0 and s.beam_s == rec["by_process"]["beam.smp"]
    assert s.qs_s == rec["query_servers"]["cpu_s"] > 0
    assert "where the time goes" in r.output and "javascript: query servers" in r.output
