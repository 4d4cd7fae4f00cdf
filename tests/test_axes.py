"""The axis model and planner, and the pure parts of the --config, --cpus, --q and --couchdb axes."""

import math
import os
import time
from pathlib import Path

import pytest

from dragnet.axes import model as axes
from dragnet.axes import config as axis_config
from dragnet.axes import cpus as axis_cpus
from dragnet.axes import q as axis_q
from dragnet.axes import couchdb as axis_couchdb
from dragnet.bench import run as bench
from dragnet.bench.switch import AxisOptions, contract_axes
from dragnet.errors import UsageError


# ---- planner

def test_product_interleaves_every_combination_within_each_round():
    a, b_ = axes.Axis("a", ["1", "2"]), axes.Axis("b", ["x", "y", "z"])
    pts = axes.plan_product([a, b_], 2)
    assert len(pts) == 12 and [p.index for p in pts] == list(range(12))
    first = [(p.values["a"], p.values["b"]) for p in pts if p.repeat == 0]
    assert first == [("1", "x"), ("1", "y"), ("1", "z"), ("2", "x"), ("2", "y"), ("2", "z")]
    assert [p.repeat for p in pts] == [0] * 6 + [1] * 6     # each round holds every combination once


def test_outer_axes_enclose_the_rounds():
    pts = axes.plan_product([axes.Axis("s", ["disk", "tmpfs"], outer=True), axes.Axis("l", ["a", "b"])], 2)
    assert [(p.values["s"], p.repeat, p.values["l"]) for p in pts] == [
        ("disk", 0, "a"), ("disk", 0, "b"), ("disk", 1, "a"), ("disk", 1, "b"),
        ("tmpfs", 0, "a"), ("tmpfs", 0, "b"), ("tmpfs", 1, "a"), ("tmpfs", 1, "b")]


def test_axis_refuses_no_value_and_duplicates():
    with pytest.raises(UsageError):
        axes.Axis("q", [])
    with pytest.raises(UsageError):
        axes.Axis("q", ["2", "2"])
    with pytest.raises(UsageError, match="at least 1"):
        axes.plan_product([axes.Axis("q", ["2"])], 0)


def test_bench_plan_puts_the_baseline_first_in_every_combination_and_round():
    opts = AxisOptions(q=["2", "8"], config=[axis_config.parse("view_updater/gc_interval_docs=1,1000")])
    p = bench.plan(["javascript"], 2, ["disk"], axes=opts.axes("local"))
    assert len(p) == 2 * 2 * 2 * 2
    combos = {}
    for r in p:
        combos.setdefault((r.repeat, tuple(sorted(r.axes.items()))), []).append(r.language)
    assert len(combos) == 8
    assert all(langs == ["erlang_baseline", "javascript"] for langs in combos.values())
    # restart-free axes vary fastest: q changes only every 4 runs within a round
    assert [r.axes["q"] for r in p[:8]] == ["2"] * 4 + ["8"] * 4


def test_ratios_pair_within_the_same_combination_and_round():
    def run(i, q, lang, dps, r=0):
        return {"index": i, "storage": "disk", "repeat": r, "language": lang, "status": "ok",
                "docs_per_sec_wall": dps, "axes": {"q": q}}
    runs = [run(0, "2", "erlang_baseline", 100.0), run(1, "2", "javascript", 50.0),
            run(2, "8", "erlang_baseline", 200.0), run(3, "8", "javascript", 50.0),
            run(4, "8", "javascript", 80.0, r=1)]
    got = bench.ratios(runs)
    assert got[1] == 0.5 and got[3] == 0.25    # q=8 pairs with q=8's baseline, not q=2's
    assert got[4] is None                       # round 1 has no baseline


def test_result_names_and_contract_axes_come_from_the_axes():
    run = {"index": 7, "storage": "disk", "scenario": "", "repeat": 1, "language": "javascript",
           "axes": {"couchdb": "couchdb:3.5.2-trixie", "config:view_updater/gc_interval_docs": "1000"}}
    assert axes.file_stem(run) == "007-disk-couchdb-couchdb_3.5.2-trixie-gc_interval_docs-1000-r1-javascript"
    labels = {a.name: a.label for a in AxisOptions(
        couchdb=["couchdb:3.5.2-trixie"], config=[axis_config.parse("view_updater/gc_interval_docs=1000")]).axes("docker")}
    assert axes.file_stem(run, labels) == \
        "007-disk-couchdb_3.5.2-trixie-view_updater_gc_interval_docs_1000-r1-javascript"
    c = contract_axes(run["axes"])
    assert c == {"couchdb": "couchdb:3.5.2-trixie", "config": "view_updater/gc_interval_docs=1000"}
    full = axes.run_axes({**run, "axes": c}, size=None)
    assert full["language"] == "javascript" and full["storage"] == "disk" and full["config"].endswith("=1000")
    assert axes.combination_label(full) == "couchdb=couchdb:3.5.2-trixie config=view_updater/gc_interval_docs=1000"


# ---- --config

INI_352 = """
[view_updater]
; The maximum queue memory size.
;queue_memory_cap = 10485760
;queue_item_cap = 500
gc_interval_docs = 1000

;[global_changes]
;max_event_delay = 25
"""
INI_350 = """
;[view_updater]
;min_writer_items = 100
;min_writer_size = 16777216
"""


def test_config_parsing():
    s = axis_config.parse("view_updater/gc_interval_docs=1,1000,infinity")
    assert (s.section, s.key, s.values) == ("view_updater", "gc_interval_docs", ("1", "1000", "infinity"))
    assert s.label("1") == "view_updater/gc_interval_docs=1"
    for bad in ("view_updater=1", "view_updater/gc=", "a/b/c=1", "/k=1", "s/k=1,,2", "s/k=1,1"):
        with pytest.raises(UsageError, match="--config"):
            axis_config.parse(bad)
    with pytest.raises(UsageError, match="given twice"):
        axis_config.parse_all(["s/k=1", "s/k=2"])


def test_known_keys_include_commented_out_settings():
    keys = axis_config.known_keys(INI_352)
    assert ("view_updater", "queue_memory_cap") in keys and ("view_updater", "gc_interval_docs") in keys
    assert ("global_changes", "max_event_delay") in keys
    assert ("view_updater", "The") not in keys
    assert ("view_updater", "min_writer_items") in axis_config.known_keys(INI_350)


def test_unknown_key_is_refused_with_the_nearest_known_key():
    s = axis_config.parse("view_updater/gc_interval_doc=1")
    with pytest.raises(UsageError, match=r"not a setting of CouchDB 3\.5\.2; did you mean view_updater/gc_interval_docs\?"):
        axis_config.check_known([s], {"3.5.2": axis_config.known_keys(INI_352)})


def test_the_catalogue_knows_what_the_code_reads_and_default_ini_does_not_name():
    # 3.5.0's default.ini names min_writer_items/min_writer_size only; its couch_mrview_updater reads more
    keys, source = axis_config.keys_of("3.5.0", INI_350)
    assert source == "catalogue" and ("view_updater", "queue_item_cap") in keys
    assert ("view_updater", "queue_memory_cap") in keys and ("view_updater", "gc_interval_docs") not in keys
    assert ("view_updater", "gc_interval_docs") in axis_config.catalogue("3.5.2")
    s = axis_config.parse("view_updater/queue_item_capp=50")
    with pytest.raises(UsageError, match=r"not a setting of CouchDB 3\.5\.0; did you mean view_updater/queue_item_cap\?"):
        axis_config.check_known([s], {"3.5.0": keys})
    # a section the code reads whole or by a computed key: any key of it is a setting
    assert axis_config.knows(axis_config.catalogue("3.5.0"), "admins", "anyone")
    assert "3.5.0" in axis_config.catalogued() and axis_config.catalogue("9.9.9") is None


@pytest.mark.skipif(not os.environ.get("DRAGNET_COUCHDB_HOME"), reason="needs a CouchDB release (DRAGNET_COUCHDB_HOME)")
def test_a_release_says_its_version():
    home = os.environ["DRAGNET_COUCHDB_HOME"]
    version = axis_couchdb.version_of(home, "local")
    assert version and (Path(home) / "lib" / f"couch-{version}").is_dir()
    cat = axis_config.catalogue(version)
    if cat is not None:     # the catalogue knows every setting the release's own default.ini names
        ini = axis_config.known_keys((Path(home) / "etc" / "default.ini").read_text())
        assert {k for k in ini if not axis_config.knows(cat, *k)} == set()


def test_without_a_catalogue_the_check_is_default_ini_only_and_says_so():
    keys, source = axis_config.keys_of("9.9.9", INI_350)
    assert source == "default.ini" and keys == axis_config.known_keys(INI_350)
    assert "partial" in axis_config.partial_warning("9.9.9", source)
    assert axis_config.keys_of("9.9.9", None) == (set(), "")
    assert "not checked" in axis_config.partial_warning("9.9.9", "")
    assert axis_config.partial_warning("3.5.0", "catalogue") is None


def test_a_setting_one_version_lacks_is_not_applicable_there():
    s = axis_config.parse("view_updater/gc_interval_docs=1,1000")
    lacking = axis_config.check_known([s], {"3.5.0": axis_config.known_keys(INI_350),
                                            "3.5.2": axis_config.known_keys(INI_352)})
    assert lacking == {"view_updater/gc_interval_docs": ["3.5.0"]}
    assert "not applicable to CouchDB 3.5.0" in axis_config.not_applicable(s, "3.5.0")
    assert "neither its code nor its default.ini" in axis_config.not_applicable(s, "3.5.0", catalogued=True)


# ---- --cpus, --q, --couchdb

def test_cpus_parsing_refuses_more_cores_than_the_machine_has():
    assert axis_cpus.parse("1,2", available=2) == ["1", "2"]
    with pytest.raises(UsageError, match="--cpus 3: .*this machine has 2"):
        axis_cpus.parse("1,3", available=2)
    with pytest.raises(UsageError, match="--cpus 0"):
        axis_cpus.parse("0", available=2)
    assert axis_cpus.parse_cpu_list("0-2,5") == {0, 1, 2, 5}


def test_q_values_and_databases():
    assert axis_q.parse("2,8,16") == ["2", "8", "16"]
    with pytest.raises(UsageError, match="--q x"):
        axis_q.parse("2,x")
    assert axis_q.db_name("decl", "8") == "decl-q8"
    axis_q.check("8", {"q": 8})
    with pytest.raises(Exception, match="q=2"):
        axis_q.check("8", {"q": 2})


def test_a_release_directory_that_is_not_one_is_refused(tmp_path):
    with pytest.raises(UsageError, match=r"--couchdb .*: not a CouchDB release directory"):
        axis_couchdb.check_release(str(tmp_path))


def test_versions_from_the_nodes_answer():
    server = {"version": "3.5.2", "node_versions": {"erlang": {"version": "27.3"},
                                                    "javascript_engine": {"name": "spidermonkey", "version": "128"}}}
    assert axis_couchdb.versions_of(server) == {"couchdb": "3.5.2", "erlang": "27.3",
                                                "javascript_engine": "spidermonkey 128"}
    assert axis_couchdb.versions_of({"version": "3.5.0", "node_versions": None})["erlang"] is None
    assert axis_couchdb.versions_of(None) is None


# ---- report --by

def _result(dps, **axes_):
    return {"summary": {"ok": True, "docs_per_sec_wall": dps},
            "bench": {"language": "javascript", "storage_label": "disk", "axes": {"language": "javascript",
                                                                                  "storage": "disk", **axes_}}}


def test_report_by_compares_an_axis_within_each_combination_of_the_others():
    from dragnet.report import by_axis as report_by

    res = [_result(v, couchdb=c, q=q) for c, q, v in (
        ("3.5.0", "8", 480.0), ("3.5.0", "8", 500.0), ("3.5.0", "8", 470.0), ("3.5.0", "8", 490.0),
        ("3.5.2", "8", 700.0), ("3.5.2", "8", 720.0), ("3.5.2", "8", 690.0), ("3.5.2", "8", 710.0),
        ("3.5.2", "2", 100.0))]
    got = report_by.compare(res, ["couchdb"])
    by_group = {g["group"]: g for g in got}
    g8 = by_group["language=javascript storage=disk q=8"]
    assert [v["value"] for v in g8["values"]] == ["couchdb=3.5.2", "couchdb=3.5.0"]
    assert g8["values"][0]["median_docs_per_s"] == 705.0
    (pair,) = g8["pairs"]
    # no CPU recorded, no bench rounds: wall seconds per 1,000 docs, unpaired (dragnet.report.ranking)
    gm = lambda v: math.exp(sum(math.log(x) for x in v) / len(v))  # noqa: E731
    assert (pair["faster"], pair["slower"], pair["metric"], pair["state"]) == \
        ("couchdb=3.5.2", "couchdb=3.5.0", "wall", "separated")
    assert not pair["interval"]["paired"] and g8["order"] == "couchdb=3.5.2 > couchdb=3.5.0"
    assert pair["ratio"] == pytest.approx(gm([700, 720, 690, 710]) / gm([480, 500, 470, 490]))
    assert by_group["language=javascript storage=disk q=2"]["pairs"] == []     # one value: nothing to compare
    with pytest.raises(UsageError, match="--by cpus: no result"):
        report_by.compare(res, ["cpus"])


def test_report_by_reads_older_results_without_bench_axes():
    from dragnet.report import by_axis as report_by

    old = {"summary": {"ok": True, "docs_per_sec_wall": 5.0}, "storage": "tmpfs",
           "bench": {"language": "python", "storage_label": "tmpfs"}}
    assert report_by.result_axes(old) == {"language": "python", "storage": "tmpfs"}


# ---- design-doc revisions

def test_ddoc_revisions_are_labelled_and_alternate_within_each_round():
    from dragnet.axes.ddoc import revision_labels

    assert revision_labels(["old=ddocs/a.json", "new=ddocs/b.json"]) == {"old": "ddocs/a.json", "new": "ddocs/b.json"}
    assert revision_labels(["git:v1:ddoc.json", "git:main:ddoc.json"]) == {"v1": "git:v1:ddoc.json",
                                                                          "main": "git:main:ddoc.json"}
    assert list(revision_labels(["x/a.json", "y/b"])) == ["a.json", "b"]
    with pytest.raises(UsageError, match="given twice"):
        revision_labels(["x/a.json", "y/a.json"])
    p = bench.plan(["javascript"], 2, ["disk"], axes=AxisOptions(ddoc={"old": None, "new": None}).axes(None))
    assert [(r.repeat, r.axes["ddoc"], r.language) for r in p[:4]] == [
        (0, "old", "erlang_baseline"), (0, "old", "javascript"), (0, "new", "erlang_baseline"), (0, "new", "javascript")]


def test_report_by_one_setting_keeps_the_other_settings_apart():
    from dragnet.report import by_axis as report_by

    res = [_result(v, config=f"view_updater/gc_interval_docs={g},view_updater/queue_memory_cap={m}")
           for g, m, v in (("1", "100000", 250.0), ("1000", "100000", 600.0), ("1", "10485760", 390.0),
                           ("1000", "10485760", 603.0))]
    got = report_by.compare(res, ["config:view_updater/gc_interval_docs"])
    assert sorted(g["group"] for g in got) == [
        "language=javascript storage=disk config:view_updater/queue_memory_cap=100000",
        "language=javascript storage=disk config:view_updater/queue_memory_cap=10485760"]
    assert all([v["value"] for v in g["values"]] == ["config:view_updater/gc_interval_docs=1000",
                                                     "config:view_updater/gc_interval_docs=1"] for g in got)
    (whole,) = report_by.compare(res, ["config"])       # every setting together: one group, four values
    assert len(whole["values"]) == 4


def test_config_restart_settings_parse_apart_and_are_restart_axes():
    from dragnet.axes import config as axis_config
    from dragnet.axes.model import LIVE, RESTART
    from dragnet.bench.switch import AxisOptions

    live, rst = axis_config.parse_all(["view_updater/gc_interval_docs=1,1000"], ["couchdb/max_dbs_open=700"])
    assert (live.restart, rst.restart) == (False, True) and rst.values == ("700",)
    axes = {a.name: a.how for a in AxisOptions(config=[live, rst]).axes("local")}
    assert axes == {"config:view_updater/gc_interval_docs": LIVE, "config:couchdb/max_dbs_open": RESTART}
    with pytest.raises(UsageError, match="--config couchdb/x given twice"):
        axis_config.parse_all(["couchdb/x=1"], ["couchdb/x=2"])


def test_each_axis_module_builds_its_axis_with_its_behaviour():
    from dragnet.axes import config as axis_config
    from dragnet.axes.model import CONTAINER, LABEL, LIVE, REFILL, RESTART, merge_restart
    from dragnet.bench.switch import AxisOptions

    live, rst = axis_config.parse_all(["view_updater/gc_interval_docs=1,1000"], ["couchdb/max_dbs_open=700"])
    opts = AxisOptions(couchdb=["a", "b"], cpus=["1", "2"], q=["2", "8"], config=[live, rst], ddoc={"x": 1, "y": 2})
    local = opts.axes("local")
    # restarts outermost, then databases, then live settings, the ddoc revision fastest
    assert [(a.name, a.how) for a in local] == [
        ("couchdb", RESTART), ("cpus", RESTART), ("config:couchdb/max_dbs_open", RESTART), ("q", REFILL),
        ("config:view_updater/gc_interval_docs", LIVE), ("ddoc", LABEL)]
    assert [a.how for a in opts.axes("docker")][:3] == [CONTAINER] * 3
    for a in local:     # each kind carries what the switcher calls for it
        assert (a.restart is not None) == (a.running is not None) == (a.how == RESTART), a.name
        assert (a.apply is not None) == (a.how in (LIVE, REFILL)), a.name
    assert [a.name for a in local if a.check_after_build] == ["cpus"]
    # one restart for several axes: their settings merged, ini and limits dicts included
    kw = merge_restart({}, {"home": "/r"})
    merge_restart(kw, {"ini": {"couchdb/x": "1"}})
    merge_restart(kw, {"ini": {"couchdb/y": "2"}, "cpus": 1.0})
    assert kw == {"home": "/r", "ini": {"couchdb/x": "1", "couchdb/y": "2"}, "cpus": 1.0}



def test_a_new_axis_is_one_record_the_cli_the_plan_and_the_report_take(monkeypatch):
    # a made-up live setting, added in one place (dragnet.axes.kinds.KINDS): the bench's option, its plan and
    # `report --by` take it with no other edit
    import importlib
    from dataclasses import asdict

    from click.testing import CliRunner

    from dragnet.axes import kinds
    from dragnet.axes.model import LIVE, Axis, AxisKind, Option, parse_list, run_axes
    from dragnet.bench import run as bench
    from dragnet.bench.switch import AxisOptions, contract_axes
    from dragnet.cli import bench as cli_bench
    from dragnet.report import by_axis as report_by

    fake = AxisKind("fake", (Option(("--fake",), "fake_text", "A,B", "A made-up setting."),),
                    parse=lambda raw: parse_list(raw.get("fake_text"), "--fake"),
                    make=lambda values, backend: [Axis("fake", values, how=LIVE, apply=lambda v, ctx: None)])
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, fake))
    try:
        cmd = importlib.reload(cli_bench).bench_cmd
        assert "--fake" in [o for p in cmd.params for o in p.opts]
        assert "A made-up setting." in CliRunner().invoke(cmd, ["--help"]).output
        seen = {}
        monkeypatch.setattr(AxisOptions, "from_options",
                            classmethod(lambda cls, raw, **v: seen.setdefault("opts", cls({"fake": fake.parse(raw)}))))
        CliRunner().invoke(cmd, ["--db", "d", "--fake", "x,y", "--no-baseline", "--no-ceiling",
                                 "--languages", "javascript", "--url", "http://127.0.0.1:9"])
        opts = seen["opts"]
    finally:
        monkeypatch.undo()
        importlib.reload(cli_bench)
    assert opts.values == {"fake": ["x", "y"]}
    # planned like any live setting: both values in every round, after the restart and refill axes
    with monkeypatch.context() as m:
        m.setattr(kinds, "KINDS", (*kinds.KINDS, fake))
        axes = AxisOptions(q=["2", "8"], fake=["x", "y"]).axes("local")
    assert [a.name for a in axes] == ["q", "fake"]
    planned = bench.plan(["javascript"], 2, ["disk"], baseline=False, axes=axes)
    assert [(p.repeat, p.axes["q"], p.axes["fake"]) for p in planned][:4] == [
        (0, "2", "x"), (0, "2", "y"), (0, "8", "x"), (0, "8", "y")]
    # the results record it as bench.axes, and `report --by fake` compares along it
    results = [{"summary": {"ok": True, "docs_per_sec_wall": 100.0 + (p.axes["fake"] == "y") * 50 + p.repeat},
                "bench": {"axes": run_axes({**asdict(p), "axes": contract_axes(p.axes)})}}
               for p in bench.plan(["javascript"], 4, ["disk"], baseline=False, axes=axes)]
    by = {g["group"]: g for g in report_by.compare(results, ["fake"])}
    assert [v["value"] for v in by["language=javascript storage=disk q=8"]["values"]] == ["fake=y", "fake=x"]
def test_the_plan_axes_options_are_records_the_bench_command_builds(monkeypatch):
    # storage's and the scenarios' options live in their axis modules (PLANNED_OPTIONS); `bench` builds them
    # from there, so one more is one record, with no edit in the CLI
    import importlib

    from click.testing import CliRunner

    from dragnet.axes import kinds, scenario_axis, storage
    from dragnet.axes.model import Option
    from dragnet.cli import bench as cli_bench

    assert kinds.PLANNED_OPTIONS == storage.OPTIONS + scenario_axis.OPTIONS
    opts = {o for p in cli_bench.bench_cmd.params for o in p.opts}
    assert {f for o in kinds.PLANNED_OPTIONS for f in o.flags} <= opts
    monkeypatch.setattr(kinds, "PLANNED_OPTIONS",
                        (*kinds.PLANNED_OPTIONS, Option(("--weather",), "weather", "W", "A made-up plan axis.")))
    try:
        cmd = importlib.reload(cli_bench).bench_cmd
        assert "--weather" in [o for p in cmd.params for o in p.opts]
        assert "A made-up plan axis." in CliRunner().invoke(cmd, ["--help"]).output
    finally:
        monkeypatch.undo()
        importlib.reload(cli_bench)
    assert "--weather" not in [o for p in cli_bench.bench_cmd.params for o in p.opts]


def test_shuffled_plan_varies_the_order_per_round_and_keeps_the_baseline_first():
    a = axes.Axis("ddoc", ["A", "B"])
    lang = axes.Axis("language", ["erlang_baseline", "javascript", "python"])
    pts = axes.plan_product([a, lang], 12, shuffle_seed=1, keep_first="erlang_baseline")
    assert pts == axes.plan_product([a, lang], 12, shuffle_seed=1, keep_first="erlang_baseline")   # seeded
    firsts = set()
    for r in range(12):
        rnd = [p.values for p in pts if p.repeat == r]
        assert sorted((v["ddoc"], v["language"]) for v in rnd) == sorted(
            (d, l) for d in "AB" for l in lang.values)                      # every combination once a round
        assert rnd[0]["language"] == rnd[3]["language"] == "erlang_baseline"
        firsts.add(rnd[0]["ddoc"])
    assert firsts == {"A", "B"}


@pytest.mark.live
def test_a_made_up_restart_axis_restarts_the_node_per_value_and_reaches_the_report(live_url, tmp_path, monkeypatch):
    # a made-up setting CouchDB takes only at its start, added in one place (dragnet.axes.kinds.KINDS): the
    # bench restarts the node it manages on each value, checks it, restores the node, and `report --by` sees it
    import json

    from dragnet.axes import kinds
    from dragnet.axes.model import RESTART, Axis, AxisKind, Option, parse_list
    from dragnet.bench.managed import managed_instance
    from dragnet.couchdb.client import connect
    from dragnet.report import model
    from dragnet.runner import bench as session
    from tests.conftest import normalised_declarations

    inst = managed_instance(live_url, os.environ)
    if inst is None or inst.backend != "local":
        pytest.skip("a restart axis needs a local CouchDB started by `dragnet couch up`")

    def read(ctx):
        return (ctx.couch.get("/_node/_local/_config").get("dragnet_fake") or {}).get("value")

    def check(v, ctx):
        if read(ctx) != v:
            raise AssertionError(f"after the restart the node reads {read(ctx)!r}, not {v!r}")
        return v
    fake = AxisKind("fake", (Option(("--fake",), "fake_text", "A,B", "A made-up start-time setting."),),
                    parse=lambda raw: parse_list(raw.get("fake_text"), "--fake"), restarts=True,
                    make=lambda values, backend: [Axis(
                        "fake", values, how=RESTART, restart=lambda v, ctx: {"ini": {"dragnet_fake/value": v}},
                        running=lambda v, ctx: (getattr(ctx.inst, "ini", None) or {}).get("dragnet_fake/value") == v,
                        check=check)])
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, fake))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                            for i, d in enumerate(normalised_declarations(40, 3))))
    db = f"dragnet_fakeaxis_{int(time.time())}"
    events = []
    try:
        out = session.bench(session.BenchRequest(
            url=live_url, db=db, data=str(data), languages="javascript", repeat=1, no_baseline=True,
            no_ceiling=True, results_dir=str(tmp_path / "out"), axis_raw={"fake_text": "a,b"}),
            lambda kind, d: events.append((kind, d)))
        assert out.exit_code == 0 and out.interrupted is None
        runs = out.report.runs
        assert [(r["axes"], r["status"]) for r in runs] == [({"fake": "a"}, "ok"), ({"fake": "b"}, "ok")]
        # one restart per value, then back onto the node the bench found
        assert [d.get("axes") for k, d in events if k == "restart"] == [{"fake": "a"}, {"fake": "b"}, None]
        assert "dragnet_fake" not in connect(live_url).get("/_node/_local/_config")
        assert managed_instance(live_url, os.environ).ini == inst.ini
        rep = model.build([str(tmp_path / "out")], by="fake")
        assert sorted(v["value"] for g in rep.by_groups for v in g["values"]) == ["fake=a", "fake=b"]
    finally:
        connect(live_url).request("DELETE", f"/{db}", ok=(200, 202, 404))


def _made_up_scenario(seen: list):
    # a made-up scenario-like axis: each value is something put around the build (as a memory limit or a
    # cache state is), recorded in the build's result; one record, nothing else edited
    from dragnet.axes.model import AROUND, Axis, AxisKind, Option, parse_list

    def around(value, ctx, build):
        seen.append(("enter", value))
        try:
            result = build()
        finally:
            seen.append(("leave", value))
        result["made_up_scenario"] = value
        return result
    return AxisKind("limit", (Option(("--made-up-limit",), "limit_text", "A,B", "A made-up scenario."),),
                    parse=lambda raw: parse_list(raw.get("limit_text"), "--made-up-limit"),
                    make=lambda values, backend: [Axis("limit", values, how=AROUND, around=around)])


def test_a_made_up_scenario_is_one_record_planned_in_every_round_and_put_around_each_build(monkeypatch):
    from dragnet.axes import kinds
    from dragnet.bench.switch import AxisSwitcher

    seen: list = []
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, _made_up_scenario(seen)))
    opts = AxisOptions(limit=["low", "high"], q=["2"])
    axes_ = opts.axes("local")
    assert [a.name for a in axes_] == ["q", "limit"]
    planned = bench.plan(["erlang_baseline", "javascript"], 2, ["disk"], axes=axes_)
    assert [(p.repeat, p.axes["limit"], p.language) for p in planned] == [
        (r, v, lang) for r in (0, 1) for v in ("low", "high") for lang in ("erlang_baseline", "javascript")]
    switcher = AxisSwitcher(opts, url="http://127.0.0.1:9", db="d", env={}, inst=None, data=None, n=None,
                            data_size=lambda: 0, on_event=lambda kind, data: None)
    built = switcher.around({"axes": {"q": "2", "limit": "high"}}, lambda: seen.append(("build", None)) or {})()
    assert built == {"made_up_scenario": "high"}
    assert seen == [("enter", "high"), ("build", None), ("leave", "high")]
    # a run without the axis is built as it is
    assert switcher.around({"axes": {"q": "2"}}, lambda: {"plain": True})() == {"plain": True}


@pytest.mark.live
def test_a_made_up_scenario_wraps_every_build_of_a_bench_and_reaches_the_report(live_url, tmp_path, monkeypatch):
    import json

    from dragnet.axes import kinds
    from dragnet.couchdb.client import connect
    from dragnet.report import model
    from dragnet.runner import bench as session
    from tests.conftest import normalised_declarations

    seen: list = []
    monkeypatch.setattr(kinds, "KINDS", (*kinds.KINDS, _made_up_scenario(seen)))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**d, "_id": f"gen:{i}"}) + "\n"
                            for i, d in enumerate(normalised_declarations(40, 3))))
    db = f"dragnet_fakescenario_{int(time.time())}"
    try:
        out = session.bench(session.BenchRequest(
            url=live_url, db=db, data=str(data), languages="javascript", repeat=2, no_baseline=True,
            no_ceiling=True, results_dir=str(tmp_path / "out"), axis_raw={"limit_text": "low,high"}),
            lambda kind, d: None)
        assert out.exit_code == 0 and out.interrupted is None
        runs = out.report.runs
        assert [(r["axes"], r["status"]) for r in runs] == [({"limit": v}, "ok") for v in ("low", "high") * 2]
        # each build ran inside its value, and its result says which
        assert seen == [(k, v) for v in ("low", "high") * 2 for k in ("enter", "leave")]
        for r in runs:
            res = json.loads((tmp_path / "out" / r["result_file"]).read_text())
            assert res["made_up_scenario"] == r["axes"]["limit"] == res["bench"]["axes"]["limit"]
        rep = model.build([str(tmp_path / "out")], by="limit")
        assert sorted(v["value"] for g in rep.by_groups for v in g["values"]) == ["limit=high", "limit=low"]
    finally:
        connect(live_url).request("DELETE", f"/{db}", ok=(200, 202, 404))


@pytest.mark.live
def test_a_signal_just_after_the_node_took_a_setting_still_puts_it_back(live_url):
    # the race CI met once: SIGTERM between the node answering the PUT and the bench noting what to put back
    import signal

    from dragnet.couchdb.client import connect
    from dragnet.signals import Terminated

    couch = connect(live_url)

    class TerminatedAfterThePut:
        def get(self, path, **kw):
            return couch.get(path, **kw)

        def request(self, method, path, **kw):
            out = couch.request(method, path, **kw)
            if method == "PUT":
                raise Terminated(signal.SIGTERM)
            return out

    s = axis_config.parse("smoosh.upgrade_views/min_priority=1000000000000000")
    before = axis_config.read(couch, s)
    applied = axis_config.Applied()
    try:
        with pytest.raises(Terminated):
            applied.set(TerminatedAfterThePut(), s, s.values[0])
        assert axis_config.read(couch, s) == s.values[0]       # the node took it
        assert applied.restore(couch) == [s.name]
        assert axis_config.read(couch, s) == before
        # a setting the node refuses is not kept: there is nothing to put back
        refused = axis_config.parse("query_servers/dragnet_test=/bin/false")
        with pytest.raises(UsageError, match="CouchDB does not take it over HTTP"):
            applied.set(couch, refused, refused.values[0])
        assert applied.restore(couch) == []
    finally:
        applied.restore(couch)
        axis_config.put(couch, s, before)


def test_settings_of_reads_back_what_value_label_recorded():
    axes = {"config:view_updater/queue_memory_cap": "10485760", "config:smoosh.ratio_views/min_priority": "1000000",
            "language": "javascript"}
    assert axis_config.settings_of(axis_config.value_label(axes)) == {
        "view_updater/queue_memory_cap": "10485760", "smoosh.ratio_views/min_priority": "1000000"}
    assert axis_config.settings_of(None) == {} and axis_config.settings_of("") == {}
