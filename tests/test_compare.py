"""dragnet compare / history / the results store / git: design docs, without a server.

The two-sided cases read real benches committed as evidence in docs/studies/compare/ci (CouchDB 3.5.0, 3,000 small
documents, five interleaved rounds of three revisions of one design doc: base, slower: an extra row per
document and a loop, renamed: a variable renamed). Expected figures are computed here from the raw wall
times in those files.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.report import compare as c
from dragnet.index import design as design
from dragnet.report import history as history
from dragnet.report.render.markdown import compare_markdown
from dragnet.measure import decide as decide
from dragnet.results import store as store
from dragnet.cli import main
from dragnet.errors import UsageError
from dragnet.results import load as load
from dragnet.results.load import load_results

REPO = Path(__file__).resolve().parent.parent
CI = REPO / "docs" / "studies" / "compare" / "ci"


def walls(folder: Path) -> list[float]:
    return [json.loads(f.read_text())["summary"]["wall_time_s"] for f in sorted(folder.rglob("0*.json"))]


@pytest.fixture(scope="module")
def ci() -> dict[str, list[dict]]:
    return {rev: load_results([CI / rev]) for rev in ("base", "slower", "renamed")}


# ---- two sides

def test_slower_revision_regresses_and_rows_changed(ci):
    cmp = c.compare(ci["base"], ci["slower"], threshold=0.05)
    assert list(cmp.varied) == ["ddoc"]                 # the revision is what differs, paired not matched
    assert [load.ddoc_hash(r["view"]["design"]["doc"]) for r in ci["base"][:1]] == [cmp.varied["ddoc"][0]]
    (cell,) = cmp.cells
    old, new = walls(CI / "base"), walls(CI / "slower")
    assert sorted(cell.old.samples) == sorted(old) and sorted(cell.new.samples) == sorted(new)
    # separate benches per round: nothing to pair; these older results record no CPU, so wall decides
    iv = decide.unpaired_interval(new, old)
    assert cell.metric == "wall" and not cell.paired and "no CPU recorded" in cell.why
    assert (cell.ratio, cell.ci_low, cell.ci_high) == pytest.approx((iv.ratio, iv.low, iv.high))
    assert cell.ci_low > 1.05 and cell.label == c.REGRESSED and cell in cmp.failing and cmp.exit_code == 1
    rows = {r["view"]: r for r in cell.rows}
    assert rows["by_group"]["new_rows"] == 2 * rows["by_group"]["old_rows"] == 6000   # one extra row a doc
    assert rows["by_name"]["differences"] == 0
    assert [r["view"] for _, r in cmp.rows_changed] == ["by_group"]
    assert cmp.to_json()["failed"] is True


def test_renamed_variable_passes(ci):
    cmp = c.compare(ci["base"], ci["renamed"], threshold=0.05)
    (cell,) = cmp.cells
    assert not cmp.failing and cell.label != c.REGRESSED
    assert all(r["differences"] == 0 for r in cell.rows)
    # five unpaired wall times a side on a loaded machine cannot rule out +5%: undecided, never a pass
    assert not cmp.rows_changed and cmp.verdict().startswith("UNDECIDED") and cmp.exit_code == 3
    assert cmp.rounds_needed and cmp.rounds_needed > 5


def test_cli_exit_codes_json_and_markdown(ci, tmp_path):
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(CI / "slower"), "--fail-if-slower", "5%",
                                  "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == c.SCHEMA and doc["failed"] and doc["cells"][0]["label"] == "regressed"
    assert doc["cells"][0]["old"]["samples"] and doc["cells"][0]["new"]["sources"]
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(CI / "renamed"), "--fail-if-slower", "60%",
                                  "--markdown"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("**") and "| cell |" in r.output and "verdict: pass" in r.output
    # a threshold inside the interval cannot be decided: exit 3, with the rounds that would likely decide
    iv = decide.unpaired_interval(walls(CI / "slower"), walls(CI / "base"))
    assert iv.low < iv.ratio * 0.9
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(CI / "slower"), "--fail-if-slower",
                                  f"{(iv.ratio * 0.9 - 1) * 100:.0f}%"])
    assert r.exit_code == 3, r.output
    assert "UNDECIDED" in r.output and "rounds would likely decide" in r.output
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(CI / "slower"), "--fail-if-slower", "0%"])
    assert r.exit_code == 2 and "--fail-if-slower 0%" in r.output


def test_one_folder_compares_along_its_two_valued_axis(ci, tmp_path):
    both = tmp_path / "both"
    shutil.copytree(CI / "base", both / "base")
    shutil.copytree(CI / "slower", both / "slower")
    cmp = c.compare_along(load_results([both]))
    assert cmp.along == "ddoc" and cmp.cells[0].label == c.REGRESSED
    assert cmp.old_label == f"ddoc={load.ddoc_hash(ci['base'][0]['view']['design']['doc'])}"   # built first
    r = CliRunner().invoke(main, ["compare", str(both), "--fail-if-slower", "5%"])
    assert r.exit_code == 1 and "regressed" in r.output
    with pytest.raises(UsageError, match="--along language: needs exactly two values"):
        c.compare_along(load_results([both]), "language")


def test_same_results_no_change_and_cells_on_one_side(ci):
    base = ci["base"]
    cmp = c.compare(base, base)
    assert not cmp.varied and cmp.cells[0].ratio == 1 and cmp.cells[0].label == c.NO_CHANGE
    moved = [dict(r, bench=dict(r["bench"], storage_label="tmpfs")) for r in base]
    cmp = c.compare(base, base + moved)
    assert [a["storage"] for a in cmp.only_new] == ["tmpfs"] and not cmp.only_old
    assert any(line.startswith("only in NEW: ") and "storage=tmpfs" in line for line in c.notes(cmp))


def test_nothing_in_common_is_exit_2(ci, fixtures_dir, tmp_path):
    from dragnet.results.addview_results import from_recording

    (tmp_path / "rec.json").write_text(json.dumps(from_recording(fixtures_dir / "python")))
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(tmp_path / "rec.json")])
    assert r.exit_code == 2 and "no cell in common" in r.output and len(r.output.strip().splitlines()) == 1


def test_labels(ci):
    def cell(old, new, rounds=False):
        keys = lambda v: [("b", i) for i in range(len(v))] if rounds else []  # noqa: E731
        return c.judge(c.Cell({}, c.Side(list(old), keys=keys(old)), c.Side(list(new), keys=keys(new))), "wall")
    assert cell([1.0], [2.0]).label == c.UNDECIDED and cell([1.0], [2.0]).why == decide.TOO_FEW
    slow = cell([1.0, 1.02, 0.98, 1.01, 0.99], [1.5, 1.52, 1.49, 1.51, 1.55])
    assert slow.label == c.REGRESSED and slow.ci_low > 1.02
    fast = cell([1.5, 1.52, 1.49, 1.51, 1.55], [1.0, 1.02, 0.98, 1.01, 0.99])
    assert fast.label == c.IMPROVED and fast.ci_high < 0.98
    # a drifting load: unpaired it is too noisy, paired by round the 3% slowdown is plain
    load = [1.0, 1.3, 0.9, 1.2, 1.1, 0.95]
    old, new = [x for x in load], [1.03 * x * (1.002 if i % 2 else 0.998) for i, x in enumerate(load)]
    assert cell(old, new).label == c.UNDECIDED and cell(old, new).why == decide.TOO_NOISY
    paired = cell(old, new, rounds=True)
    assert paired.paired and paired.label == c.REGRESSED
    same = cell([1.0, 1.01, 0.99, 1.0, 1.005, 0.995], [1.002, 1.0, 0.995, 1.004, 1.0, 0.998], rounds=True)
    assert same.label == c.NO_CHANGE
    cmp = c.Comparison("a", "b", [same], [], [], {}, threshold=0.05)
    assert not cmp.failing and not cmp.too_noisy and cmp.exit_code == 0
    cmp = c.Comparison("a", "b", [paired], [], [], {}, threshold=0.03)   # +3% ± a little: cannot tell
    assert cmp.too_noisy == [paired] and cmp.exit_code == 3
    assert cell([], [1.0]).label == c.UNDECIDED


def test_cpu_metric_decides_when_recorded(ci):
    def with_cpu(results, per_1000):
        return [dict(r, summary=dict(r["summary"], cpu_s_per_1000_docs=per_1000 * (1 + 0.01 * (i % 3))))
                for i, r in enumerate(results)]
    cmp = c.compare(with_cpu(ci["base"], 2.0), with_cpu(ci["renamed"], 2.0), threshold=0.05)
    (cell,) = cmp.cells
    assert cell.metric == "cpu" and cell.label == c.NO_CHANGE and cmp.exit_code == 0
    assert cell.old.cpu_median == pytest.approx(2.02)
    wall = c.compare(with_cpu(ci["base"], 2.0), with_cpu(ci["renamed"], 2.0), threshold=0.05, metric="wall")
    assert wall.cells[0].metric == "wall" and wall.cells[0].ratio == pytest.approx(cell.wall[0])


def test_qs_metric_decides_on_the_query_servers_cpu_and_falls_back_to_couchdbs(ci):
    # CouchDB's CPU says nothing (+1% ± beam's noise), the query servers' doubles: qs sees the regression
    def with_cpu(results, total, qs):
        return [dict(r, summary=dict(r["summary"], cpu_s_per_1000_docs=total * (1 + 0.01 * (i % 3)),
                                     **({"qs_cpu_s_per_1000_docs": qs * (1 + 0.002 * (i % 2))} if qs else {})))
                for i, r in enumerate(results)]
    cmp = c.compare(with_cpu(ci["base"], 2.0, 0.5), with_cpu(ci["renamed"], 2.02, 1.0), threshold=0.05, metric="qs")
    (cell,) = cmp.cells
    assert cell.metric == "qs" and cell.label == c.REGRESSED and cmp.exit_code == 1
    assert cell.ratio == pytest.approx(2.0, rel=0.01)
    # older builds without it: judged on CouchDB's CPU, and the table says so
    old = c.compare(with_cpu(ci["base"], 2.0, None), with_cpu(ci["renamed"], 2.0, None), metric="qs")
    assert old.cells[0].metric == "cpu" and "no query-server CPU recorded" in old.cells[0].why


def test_threshold_parsing():
    assert c.parse_threshold("5%") == pytest.approx(0.05) and c.parse_threshold("12.5") == pytest.approx(0.125)
    with pytest.raises(UsageError, match="--fail-if-slower fast"):
        c.parse_threshold("fast")


def test_bad_results_files(ci, tmp_path):
    src = next((CI / "base").rglob("000-*.json"))
    doc = json.loads(src.read_text())
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(dict(doc, schema="dragnet.addview/2")))
    r = CliRunner().invoke(main, ["compare", str(newer), str(CI / "base")])
    assert r.exit_code == 2 and "'dragnet.addview/2'" in r.output and str(newer) in r.output
    cut = tmp_path / "cut" / "000-disk-r0-javascript.json"
    cut.parent.mkdir()
    text = src.read_text()
    cut.write_text(text[: len(text) // 2])
    r = CliRunner().invoke(main, ["compare", str(CI / "base"), str(cut.parent)])
    assert r.exit_code == 2 and str(cut) in r.output and "line " in r.output and "column" in r.output


# ---- the store and history

def test_store_baselines_and_missing_name(ci, tmp_path):
    s = tmp_path / "store"
    with pytest.raises(UsageError, match="it has none"):
        store.baseline(s, "main")
    e = store.save(s, CI / "base", "main")
    assert e["couchdb"] == ci["base"][0]["couchdb"]["version"] and e["otp"] and e["engine"]
    assert e["ddoc_hashes"] == [load.ddoc_hash(ci["base"][0]["view"]["design"]["doc"])]
    assert e["machine"]["hostname"] and e["settings"]["languages"] == ["javascript"]
    assert sorted(e["cells"][0]["docs_s"]) == sorted(r["summary"]["docs_per_sec_wall"] for r in ci["base"])
    store.save(s, CI / "slower", "branch")
    r = CliRunner().invoke(main, ["compare", "main", "branch", "--store", str(s), "--fail-if-slower", "5%"])
    assert r.exit_code == 1, r.output
    r = CliRunner().invoke(main, ["compare", "mian", "branch", "--store", str(s)])
    assert r.exit_code == 2 and "no baseline 'mian'" in r.output and "baselines: branch, main" in r.output


def _save_many(args):
    s, folder, name, n = args
    for i in range(n):
        store.save(s, folder, f"{name}{i}")


def test_two_processes_saving_at_once_keep_every_entry(tmp_path):
    s = tmp_path / "store"
    ctx = multiprocessing.get_context("spawn")        # real, separate interpreters
    with ctx.Pool(2) as pool:
        pool.map(_save_many, [(s, CI / "base", "a", 6), (s, CI / "renamed", "b", 6)])
    runs = store.read_index(s)
    assert sorted(r["name"] for r in runs) == sorted([f"a{i}" for i in range(6)] + [f"b{i}" for i in range(6)])
    assert len({r["id"] for r in runs}) == 12
    assert all(len(list((s / r["path"]).rglob("0*.json"))) == 5 for r in runs)
    assert not list(s.glob("*.tmp")) and not list((s / "runs").glob(".*"))


def test_history_with_too_few_builds_says_no_interval(ci, tmp_path):
    s = tmp_path / "store"
    for rev, rounds in (("base", ("r1", "r2")), ("slower", ("r3", "r4"))):   # in the order they ran
        for rnd in rounds:
            store.save(s, CI / rev / rnd, rev)
    entries = store.read_index(s)
    (ser,) = history.series(entries, "docs_s", "ddoc")
    assert [len(p.samples) for p in ser.points] == [2, 2]
    assert ser.points[1].ci is None and ser.points[1].note == "n=2: no interval" and not ser.points[1].step
    r = CliRunner().invoke(main, ["history", "--store", str(s), "--by", "ddoc"])
    assert r.exit_code == 0 and "n=2: no interval" in r.output and "STEP" not in r.output


def test_history_flags_the_step(ci, tmp_path):
    s = tmp_path / "store"
    for rev in ("base", "renamed", "slower"):
        store.save(s, CI / rev, rev)
    entries = store.read_index(s)
    rev = {e["id"]: e["name"] for e in entries}
    (ser,) = history.series(entries, "docs_s", "date")
    # the rounds ran base, slower, renamed: the slower revision is a step down, the renamed one back up
    assert [rev[p.runs[0]] for p in ser.points] == ["base", "slower", "renamed"]
    assert [p.step for p in ser.points] == [False, True, True]
    slower = ser.points[1]
    # decide's unpaired interval, as compare judges: geometric means, 99% Welch t on the logs
    assert slower.ratio == pytest.approx(statistics.geometric_mean(slower.samples)
                                         / statistics.geometric_mean(ser.points[0].samples))
    assert slower.ci[1] < 1 and slower.state == "separated"
    (by_ddoc,) = history.series(entries, "docs_s", "ddoc")
    assert len(by_ddoc.points) == 3                                   # three revisions, three hashes
    pytest.importorskip("matplotlib")
    png = tmp_path / "h.png"
    r = CliRunner().invoke(main, ["history", "--store", str(s), "--plot", str(png), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [p["step"] for p in doc["series"][0]["points"]] == [False, True, True]
    assert png.read_bytes().startswith(b"\x89PNG")
    # the table: one row per run, both steps in it, their count and the chart under it
    r = CliRunner().invoke(main, ["history", "--store", str(s), "--plot", str(png)])
    assert r.exit_code == 0, r.output
    assert r.output.count("STEP") == 2 and "2 step(s): a step: the ratio of neighbouring groups" in r.output
    assert r.output.rstrip().endswith(f"chart: {png}")
    r = CliRunner().invoke(main, ["history", "--store", str(s), "--where", "language"])
    assert r.exit_code == 2 and "--where language: expected AXIS=VALUE" in r.output


# ---- git:REF:path

@pytest.fixture()
def repo(tmp_path):
    def git(*a):
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    shutil.copy(REPO / "tests" / "ddocs" / "compare" / "base.json", tmp_path / "app.json")
    shutil.copytree(REPO / "tests" / "ddocs" / "app", tmp_path / "couchapp")
    git("add", ".")
    git("commit", "-qm", "base")
    shutil.copy(REPO / "tests" / "ddocs" / "compare" / "slower.json", tmp_path / "app.json")
    git("commit", "-qam", "slower")
    return tmp_path


def test_git_sources(repo):
    old = design.load("git:main~1:app.json", cwd=str(repo))
    new = design.load("git:main:app.json", cwd=str(repo))
    assert old.doc == design.load(str(REPO / "tests/ddocs/compare/base.json")).doc
    assert new.doc != old.doc and "main~1" in old.source
    folder = design.load("git:main:couchapp", cwd=str(repo))
    assert folder.doc == design.load(str(REPO / "tests/ddocs/app")).doc
    with pytest.raises(UsageError, match="no ref 'nope'"):
        design.load("git:nope:app.json", cwd=str(repo))
    with pytest.raises(UsageError, match="no path 'gone.json' at main"):
        design.load("git:main:gone.json", cwd=str(repo))
    with pytest.raises(UsageError, match="not in a git repository"):
        design.load("git:main:app.json", cwd=str(repo.parent))


def test_bench_axes_are_the_cells_and_one_folder_picks_the_two_valued_axis(ci):
    """Results carrying bench.axes (the axes contract) are matched by those axes, not derived ones."""
    def labelled(results, rev):
        return [dict(r, bench=dict(r["bench"], axes={"language": "javascript", "storage": "disk", "ddoc": rev,
                                                     "couchdb": "couchdb:3.5.0"})) for r in results]
    both = labelled(ci["base"], "main") + labelled(ci["slower"], "branch")
    cmp = c.compare_along(both, threshold=0.05)
    assert cmp.along == "ddoc" and (cmp.old_label, cmp.new_label) == ("ddoc=main", "ddoc=branch")
    assert cmp.cells[0].axes["ddoc"] == "main" and cmp.cells[0].axes["design"] == "_design/items"
    assert cmp.failing == cmp.cells
    assert c.compare_along(both, "ddoc").cells[0].ratio == cmp.cells[0].ratio


def test_an_unknown_storage_labels_nothing(ci):
    """A bench on a CouchDB given by URL records storage "unknown": not a value, so not in any cell's label."""
    def labelled(results, rev):
        return [dict(r, bench=dict(r["bench"], axes={"language": "javascript", "storage": "unknown", "ddoc": rev}))
                for r in results]
    cmp = c.compare_along(labelled(ci["base"], "main") + labelled(ci["slower"], "branch"))
    assert "storage" not in cmp.cells[0].axes and "storage" not in c.common_axes(cmp)
    text = compare_markdown(cmp) + "\n".join(c.notes(cmp))
    assert "storage=" not in text and "unknown" not in text
    legacy = dict(ci["base"][0], bench={**{k: v for k, v in ci["base"][0]["bench"].items()
                                            if k not in ("axes", "storage_label")}, "size": 3000}, storage=None)
    assert "storage" not in load.axes_of(legacy) and load.axes_of(legacy)["size"] == "3000"


def test_new_failures_fail_the_gate(ci):
    broken = [dict(r, summary=dict(r["summary"], ok=False, error="map function raised")) for r in ci["base"][:1]]
    cmp = c.compare(ci["base"], ci["base"][1:] + broken, threshold=0.05)
    (cell,) = cmp.cells
    assert cell.new.failed == 1 and cmp.failing == [cell]
    assert any(line.startswith("failed (new): ") and "map function raised" in line for line in c.notes(cmp))


def test_bench_refuses_a_missing_baseline_before_anything_runs(tmp_path):
    s = tmp_path / "store"
    store.save(s, CI / "base", "main")
    r = CliRunner().invoke(main, ["bench", "--url", "http://127.0.0.1:9", "--db", "x", "--baseline", "mian",
                                  "--store", str(s), "--results", str(tmp_path / "out")])
    assert r.exit_code == 2 and "no baseline 'mian'" in r.output and "baselines: main" in r.output
    assert not (tmp_path / "out").exists()


def test_an_axis_only_one_side_records_is_left_out(ci):
    unversioned = [dict(r, couchdb={}) for r in ci["base"]]       # results from before versions were recorded
    cmp = c.compare(unversioned, ci["renamed"])
    assert len(cmp.cells) == 1 and "couchdb" not in cmp.cells[0].axes and list(cmp.varied) == ["ddoc"]


def test_store_index_of_a_newer_schema_or_damaged_is_one_line(tmp_path):
    s = tmp_path / "store"
    s.mkdir()
    (s / "index.json").write_text(json.dumps({"schema": "dragnet.store/2", "runs": []}))
    r = CliRunner().invoke(main, ["history", "--store", str(s)])
    assert r.exit_code == 1 and "'dragnet.store/2'" in r.output and len(r.output.strip().splitlines()) == 1
    (s / "index.json").write_text('{"schema": "dragnet.store/1", "runs": [')
    r = CliRunner().invoke(main, ["store", "list", "--store", str(s)])
    assert r.exit_code == 1 and "index.json: not valid JSON (line 1" in r.output


def test_one_folder_keeps_the_order_the_bench_was_given(ci):
    """Shuffled rounds may build the second revision first: the recorded axis order still makes it NEW."""
    def labelled(results, rev):
        return [dict(r, bench=dict(r["bench"], axes={"language": "javascript", "ddoc": rev},
                                   axis_values={"ddoc": ["main", "branch"]})) for r in results]
    both = labelled(ci["slower"], "branch") + labelled(ci["base"], "main")
    for r in both[:len(ci["slower"])]:    # the branch's builds made first
        r["started_at"] = "2000-01-01T00:00:00+00:00"
    cmp = c.compare_along(both, threshold=0.05)
    assert (cmp.old_label, cmp.new_label) == ("ddoc=main", "ddoc=branch") and cmp.exit_code == 1


def test_gate_bad_input_is_one_line_before_anything_runs(tmp_path):
    ddocs = REPO / "tests" / "ddocs" / "compare"
    common = ["bench", "--url", "http://127.0.0.1:9", "--db", "x", "--languages", "javascript",
              "--results", str(tmp_path / "r")]
    cases = [([f"--ddoc={ddocs / 'base.json'}", "--gate", "5%"], "--gate needs exactly two --ddoc revisions"),
             ([f"--ddoc=a={ddocs / 'base.json'}", f"--ddoc=b={ddocs / 'slower.json'}", "--gate", "0%"],
              "--gate 0%: expected a percentage above 0"),
             ([f"--ddoc=a={ddocs / 'base.json'}", f"--ddoc=b={ddocs / 'slower.json'}", "--gate", "5%",
               "--max-runs", "4"], "--max-runs 4: the gate needs at least 5 rounds")]
    for args, message in cases:
        r = CliRunner().invoke(main, [*common, *args])
        assert r.exit_code == 2 and message in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
