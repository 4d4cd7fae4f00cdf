"""qsbench --couchdb: which bench language runs each server (bench.inside), and the two rankings side by side
(report.qsbench_inside)."""

import json
from pathlib import Path

import pytest

from dragnet.bench import inside as inside
from dragnet.report.qsbench_inside import side_by_side
from dragnet.report.share import EngineShare, Workload
from dragnet.servers.discovery import ServerSpec


def _spec(name, language, dialect):
    return ServerSpec(name, language, ("/bin/true",), dialect)


def test_each_server_gets_the_bench_language_that_runs_its_code_once_per_couchdb_language():
    specs = [_spec("couchjs", "javascript", "es5"), _spec("quickjs-es2015", "javascript_quickjs", "es2015"),
             _spec("bun", "bun", "es2015"), _spec("couchpy", "python", "python"),
             _spec("couchpy-pypy", "python", "python"), _spec("mine", "mine", "es5")]
    names, left = inside.languages_for(specs)
    assert names == {"couchjs": "javascript", "quickjs-es2015": "javascript_quickjs_es2015", "bun": "bun",
                     "couchpy": "python"}
    assert any(w.startswith("couchpy-pypy: CouchDB runs one server for python, here couchpy") for w in left)
    assert any(w.startswith("mine: no bench language") for w in left)


def _engine(name, dps):
    return EngineShare(name, 2, 10.0, dps, None, None, None, None, None, None)


def test_side_by_side_ratios_are_to_the_protocols_slowest_server_in_both_rankings():
    loads = [Workload("view files", "disk", [_engine("ceiling", 300.0), _engine("bun", 200.0),
                                             _engine("javascript", 160.0)], [], [])]
    rows = side_by_side({"bun": 4000.0, "couchjs": 800.0}, {"bun": "bun", "couchjs": "javascript"}, loads)
    assert [r.server for r in rows] == ["ceiling", "bun", "couchjs"]     # the cap first, then the ranking
    ceiling, bun, couchjs = rows
    assert bun.protocol_x == pytest.approx(5.0) and bun.couchdb_x == pytest.approx(1.25)
    assert couchjs.protocol_x == 1.0 and couchjs.couchdb_x == 1.0
    assert ceiling.protocol_dps is None and ceiling.couchdb_x == pytest.approx(300 / 160)


@pytest.mark.live
def test_live_qsbench_couchdb_prints_both_rankings_through_the_report(live_url, live_db, tmp_path):
    """qsbench --couchdb against a real CouchDB: qsbench's table, then the side-by-side table built by
    report.qsbench_inside from the bench it ran, the engine share and the bench's folder."""
    import re

    from click.testing import CliRunner
    from conftest import live_password

    from dragnet.cli import main

    _couch, db = live_db
    r = CliRunner().invoke(main, ["qsbench", "--count", "60", "--servers", "python3", "--repeat", "1",
                                  "--warmup", "0", "--cache", str(tmp_path / "cache"), "--results",
                                  str(tmp_path / "res"), "--couchdb", live_url, "--couchdb-db", db])
    assert r.exit_code == 0, r.output
    assert "over the protocol and inside CouchDB" in r.output
    folder = re.search(r"^inside CouchDB: (\S+)$", r.output, re.M).group(1)
    manifest = json.loads((Path(folder) / "bench.json").read_text())
    assert {x["language"] for x in manifest["runs"]} == {"python3", "ceiling"} and \
        all(x["status"] == "ok" for x in manifest["runs"])
    row = next(line for line in r.output.splitlines() if re.match(r"\W*python3\W+python3\W", line))
    assert "–" not in row.split("python3")[-1].split()[:4]      # both docs/s and both ratios measured
    assert "engine share" in r.output and live_password(live_url) not in r.output
