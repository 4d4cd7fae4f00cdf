"""The CI recipe of docs/compare.md, run for real: docs/studies/compare/ci-compare.sh runs `bench --ddoc old=… --ddoc
new=… --gate 5%` on a live CouchDB: shuffled interleaved rounds, paired, on the map functions' instructions per
document (`instructions`, the gate's default: valgrind's counts in couchjs on a sample of the database), until
the gate decides.

- a revision whose map emits an extra row per document and loops 30,000 times per document costs several
  times the instructions: its interval lies far above +5% at the first look, so the gate fails it (exit 1)
  after five rounds;
- a revision that only renames a variable executes the same instructions to a few hundredths of a percent:
  its interval lies below +5% at the first look (exit 0), whatever the machine's load. (On CPU time a
  rename may stay undecided, exit 3: docs/statistics.md.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import live_password, write_items

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "docs" / "studies" / "compare" / "ci-compare.sh"
DDOCS = REPO / "tests" / "ddocs" / "compare"


@pytest.fixture(scope="module")
def items(live_url, tmp_path_factory):
    """A data file of 3,000 small documents and a database name (the bench imports it; deleted afterwards)."""
    from dragnet.couchdb.client import connect, db_path

    data = write_items(tmp_path_factory.mktemp("items") / "items.jsonl", 3000)
    db = f"dragnet_test_compare_{int(time.time())}"
    yield data, db
    connect(live_url).request("DELETE", db_path(db), ok=(200, 202, 404))


def _recipe(live_url, items, new: str, out: Path) -> subprocess.CompletedProcess:
    from urllib.parse import unquote, urlsplit

    from dragnet.couchdb.client import split_credentials

    base, _, _ = split_credentials(live_url)
    parts = urlsplit(live_url)
    env = {**os.environ, "URL": base, "DB": items[1], "DATA": str(items[0]), "OLD": str(DDOCS / "base.json"),
           "NEW": str(DDOCS / new), "OUT": str(out), "DRAGNET": f"{sys.executable} -m dragnet",
           "COUCHDB_USER": unquote(parts.username) if parts.username else os.environ.get("COUCHDB_USER", "admin"),
           "COUCHDB_PASSWORD": live_password(live_url), "PYTHONPATH": str(REPO)}
    return subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.live
def test_live_recipe_fails_a_slower_revision(live_url, items, tmp_path):
    r = _recipe(live_url, items, "slower.json", tmp_path / "ci")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "regressed FAIL" in r.stdout and "verdict: FAIL" in r.stdout and "(instructions, paired)" in r.stdout
    assert "rows changed: _design/items view by_group" in r.stdout and "3,000 → 6,000 map rows" in r.stdout
    assert "judged on instructions per document" in r.stdout       # the gate's own comment, its roles in it
    assert live_password(live_url) not in r.stdout + r.stderr + (tmp_path / "ci" / "bench.log").read_text()
    builds = list((tmp_path / "ci" / "bench").rglob("*-ddoc-new-*-javascript.json"))
    assert len(builds) == 5                   # decided at the first look
    # the warm-up round: beside the gate's folder, so neither the gate nor compare counts it
    assert len(list((tmp_path / "ci" / "bench-warmup").rglob("*-ddoc-new-*-javascript.json"))) == 1
    assert all(json.loads(b.read_text())["summary"]["qs_cpu_s_per_1000_docs"] > 0 for b in builds)
    counts = [json.loads(b.read_text())["instructions"] for b in builds]
    assert all(c["docs"] == 500 and c["ir_with_docs"] > c["ir_start"] > 0 for c in counts)


@pytest.mark.live
def test_live_recipe_passes_a_renamed_variable(live_url, items, tmp_path):
    r = _recipe(live_url, items, "renamed.json", tmp_path / "ci")
    # passed on the counts; or, when the load put wall time or the query servers' CPU wholly above +5%, held
    # undecided with that figure named (never failed, never passed over it)
    held = r.returncode == 3 and "pass on what the gate judges, but" in r.stdout
    assert (r.returncode == 0 and "verdict: pass" in r.stdout) or held, r.stdout + r.stderr
    assert "rows changed" not in r.stdout and "FAIL" not in r.stdout and "(instructions, paired)" in r.stdout
    # decided at the first look: the counts do not move with the machine
    assert len(list((tmp_path / "ci" / "bench").rglob("*-ddoc-new-*-javascript.json"))) == 5


@pytest.mark.live
def test_live_bench_saves_a_baseline_and_compares_with_it(live_url, items, tmp_path):
    from click.testing import CliRunner

    from dragnet.results import store as store
    from dragnet.cli import main

    s = tmp_path / "store"
    common = ["bench", "--url", live_url, "--db", items[1], "--data", str(items[0]), "--languages", "javascript",
              "--repeat", "1", "--no-baseline", "--no-ceiling", "--store", str(s)]
    r = CliRunner().invoke(main, [*common, "--ddoc", str(DDOCS / "base.json"), "--results", str(tmp_path / "a"),
                                  "--save-baseline", "main"])
    assert r.exit_code == 0, r.output
    (entry,) = store.read_index(s)
    assert entry["name"] == "main" and entry["couchdb"] and entry["cells"][0]["docs_s"]
    r = CliRunner().invoke(main, [*common, "--ddoc", str(DDOCS / "slower.json"), "--results", str(tmp_path / "b"),
                                  "--baseline", "main", "--json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.stdout)["baseline"]
    assert cmp["old"] == f"baseline main ({entry['date']})" and list(cmp["varied"]) == ["ddoc"]
    assert cmp["cells"][0]["label"] == "undecided"           # one build a side decides nothing
    assert [x["view"] for x in cmp["rows_changed"]] == ["by_group"]


@pytest.mark.live
def test_live_compare_of_a_bench_by_url_leaves_the_unknown_storage_out(live_url, items, tmp_path):
    from click.testing import CliRunner

    from dragnet.cli import main

    env = {"DRAGNET_STATE_DIR": str(tmp_path / "state")}     # dragnet does not manage this server here
    r = CliRunner(env=env).invoke(main, [
        "bench", "--url", live_url, "--db", items[1], "--data", str(items[0]), "--languages", "javascript",
        "--repeat", "1", "--no-baseline", "--no-ceiling", "--results", str(tmp_path / "out"),
        "--ddoc", f"a={DDOCS / 'base.json'}", "--ddoc", f"b={DDOCS / 'renamed.json'}"])
    assert r.exit_code == 0, r.output
    r = CliRunner(env=env).invoke(main, ["compare", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert "ddoc=a" in r.output and "storage" not in r.output, r.output


@pytest.mark.live
def test_live_size_sweep_saved_as_a_baseline_reads_in_history_and_compare(live_url, items, tmp_path):
    from click.testing import CliRunner

    from dragnet.results import store as store
    from dragnet.cli import main

    s = tmp_path / "store"
    r = CliRunner().invoke(main, [
        "bench", "--url", live_url, "--db", items[1] + "_sizes", "--data", str(items[0]), "--sizes", "100,200",
        "--languages", "javascript", "--repeat", "1", "--no-baseline", "--no-ceiling", "--results", str(tmp_path / "sweep"),
        "--store", str(s), "--save-baseline", "sweep"])
    assert r.exit_code == 0, r.output
    (entry,) = store.read_index(s)
    assert entry["name"] == "sweep" and entry["settings"]["size"] == [100, 200]
    assert sorted(c["axes"]["size"] for c in entry["cells"]) == ["100", "200"]
    assert all(len(c["docs_s"]) == 1 for c in entry["cells"])
    r = CliRunner().invoke(main, ["history", "--store", str(s), "--json"])
    assert r.exit_code == 0, r.output
    assert sorted(x["axes"]["size"] for x in json.loads(r.stdout)["series"]) == ["100", "200"]
    r = CliRunner().invoke(main, ["compare", "sweep", str(tmp_path / "sweep"), "--store", str(s), "--json"])
    assert r.exit_code == 0, r.output
    cmp = json.loads(r.stdout)
    assert sorted(c["axes"]["size"] for c in cmp["cells"]) == ["100", "200"]
