"""Scenarios: expansion, the bench plan with a scenario axis, bytes written, the "disk matters?" table and
its computed verdict; plus the live check on a local CouchDB as root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dragnet.bench import run as bench
from dragnet.data import ensure as ensure
from dragnet.errors import DragnetError
from dragnet.couchdb import limits as limits
from dragnet.measure import pidstat as pidstat
from dragnet.axes import scenario as scenario
from dragnet.report import scenario_table as scenario_table
from dragnet.errors import UsageError
from dragnet.results import load as load

REF = "mem-unlimited/unlimited/warm"
SLOW = "mem-64.0MiB/hdd-150iops/cold"


def test_expand_and_labels():
    scs = scenario.expand([None, 64 * 1024**2], limits.parse_profiles("unlimited,hdd-150iops"), ["warm", "cold"])
    assert len(scs) == 8
    assert scs[0].label == REF and scs[0].is_reference and not scs[0].limited
    assert scs[-1].label == SLOW and scs[-1].limited
    assert scenario.reference_label(scs[::-1]) == REF
    with pytest.raises(UsageError, match="--cache lukewarm"):
        scenario.expand([None], [], ["lukewarm"])


def test_plan_runs_every_scenario_with_its_own_baseline():
    runs = bench.plan(["javascript"], 2, ["disk"], scenarios=[REF, SLOW])
    # scenarios alternate within each round, so a drifting load is shared by all of them
    assert [(r.scenario, r.repeat, r.language) for r in runs] == [
        (REF, 0, "erlang_baseline"), (REF, 0, "javascript"), (SLOW, 0, "erlang_baseline"), (SLOW, 0, "javascript"),
        (REF, 1, "erlang_baseline"), (REF, 1, "javascript"), (SLOW, 1, "erlang_baseline"),
        (SLOW, 1, "javascript")]
    entries = [{**r.__dict__, "status": "ok", "docs_per_sec_wall": 100.0 if r.scenario == REF else 10.0}
               for r in runs]
    entries[7]["docs_per_sec_wall"] = 5.0
    # the yardstick is the baseline of the same scenario and round, never the other scenario's
    assert bench.ratios(entries)[7] == 0.5


def test_bytes_written_and_write_amplification(fixtures_dir):
    samples = pidstat.parse((fixtures_dir / "erlang_baseline" / "pidstat.txt").read_text()).samples
    beam = [s for s in samples if s["family"] == "beam"]
    written = scenario.bytes_written(samples)
    assert written == int(sum(s["kb_wr_s"] for s in beam) * 1024)
    assert written > 0
    assert scenario.write_amplification(written, written // 4) == pytest.approx(4.0, rel=1e-3)
    assert scenario.write_amplification(None, 10) is None and scenario.bytes_written([]) is None


def runs_for(ref_rates, slow_rates, oom=0):
    out = []
    for i, v in enumerate(ref_rates):
        out.append({"language": "erlang_baseline", "storage": "disk", "scenario": REF, "status": "ok",
                    "docs_per_sec_wall": v, "iostat": {"r_s": 0.0, "rkb_s": 0.0, "r_await": 0.0, "util_pct": 1.0}})
    for v in slow_rates:
        out.append({"language": "erlang_baseline", "storage": "disk", "scenario": SLOW, "status": "ok",
                    "docs_per_sec_wall": v, "iostat": {"r_s": 150.0, "rkb_s": 600.0, "r_await": 7.0,
                                                       "util_pct": 99.0}})
    for _ in range(oom):
        out.append({"language": "erlang_baseline", "storage": "disk", "scenario": SLOW, "status": "oom",
                    "docs_per_sec_wall": None})
    return out


def test_disk_matters_verdict_from_numbers():
    rows = scenario.disk_matters(runs_for([1000, 1100, 900], [300, 310, 290]), REF)
    slow = next(r for r in rows if r.scenario == SLOW)
    assert slow.ratio == pytest.approx(300 / 1000) and slow.slower_every_round
    # the one verdict rule: decide's interval of the docs/s ratio (unpaired: the rows keep no rounds)
    from dragnet.measure import decide

    iv = decide.unpaired_interval([300, 310, 290], [1000, 1100, 900])
    assert iv.high < 1 - decide.NOISE
    assert scenario_table.verdict(rows, REF) == (f"disk-bound in {SLOW} (erlang_baseline, disk): ×0.30 "
                                                 f"[{iv.low:.2f} … {iv.high:.2f}]")
    cells = scenario_table.disk_rows(rows)
    assert cells[1][:8] == ["erlang_baseline", "disk", SLOW, "3", "300", "0.30", "yes", "0"]
    assert cells[1][8:] == ["150", "600", "7.00", "99.0"]


def test_verdict_does_not_claim_an_order_the_rounds_do_not_support():
    rows = scenario.disk_matters(runs_for([1000, 700, 1100], [800, 1050, 850]), REF)
    v = scenario_table.verdict(rows, REF)
    assert v.startswith("disk does not matter in these runs") and "×0.85" in v and "not below 1 − 2%" in v
    # two runs a side give no interval: never disk-bound, said so
    v = scenario_table.verdict(scenario.disk_matters(runs_for([1000, 1100], [300, 310]), REF), REF)
    assert v.startswith("disk does not matter") and "n=2: no interval" in v
    rows = scenario.disk_matters(runs_for([1000], [], oom=1), REF)
    assert scenario_table.verdict(rows, REF).startswith(f"OOM-killed in {SLOW}")


# ---------------------------------------------------------------- live

def _live_env():
    url = os.environ.get("DRAGNET_TEST_COUCHDB_URL")
    if not url:
        pytest.skip("DRAGNET_TEST_COUCHDB_URL not set")
    if os.geteuid() != 0:
        pytest.skip("needs root for cgroups")
    return url


@pytest.mark.live
def test_refused_up_front_when_data_is_not_on_a_block_device(tmp_path):
    url = _live_env()
    from dragnet.couchdb.client import connect
    couch = connect(url)
    sc = scenario.Scenario(None, limits.PROFILES["hdd-150iops"], "cold")
    ddir = scenario.data_dir(couch, scenario.couch_pid(url))
    if ddir is None:
        pytest.skip("CouchDB is not on this machine")
    if os.major(os.stat(ddir).st_dev) == 0:
        with pytest.raises(Exception, match="without a block device"):
            scenario.prepare(sc, couch, url)
    else:
        the_plan, pid, d = scenario.prepare(sc, couch, url)
        assert the_plan.device is not None and pid and d == ddir


def _dragnet_groups(ctrl) -> set[str]:
    return {p.name for p in Path(ctrl).glob("dragnet-*") if p.is_dir()}


@pytest.mark.live
def test_memory_limit_and_hdd_throttle_cold_reads_the_throttled_device(tmp_path):
    url = _live_env()
    from dragnet.couchdb.client import connect
    couch = connect(url)
    pid = scenario.couch_pid(url)
    ddir = scenario.data_dir(couch, pid) if pid else None
    if ddir is None or os.major(os.stat(ddir).st_dev) == 0:
        pytest.skip("CouchDB's data is not on a local block device")
    layout = limits.detect()
    if layout.memory is None or layout.blkio is None:
        pytest.skip("no writable memory and blkio/io cgroup controllers")
    db = f"dragnet_test_disk_{os.getpid()}"
    # 10000 docs of ~10 KB of incompressible text: a ~100 MB database file, little CPU per byte
    import base64
    import json
    data = tmp_path / "docs.jsonl"
    with data.open("w") as fh:
        for i in range(10000):
            fh.write(json.dumps({"_id": f"d{i:06d}", "n": i, "pad": base64.b64encode(os.urandom(7500)).decode()}) + "\n")
    before = {ctrl: _dragnet_groups(ctrl) for ctrl in (layout.memory, layout.blkio)}
    try:
        ensure.ensure_data(couch, db, data, q=2)
        # the group is charged only for what CouchDB allocates and reads after entering it (v1 keeps
        # earlier charges where they were); its room for page cache must be smaller than the database, and
        # its room for beam's new allocations wide (12 MiB was reached in a CI run, after ~90 live tests)
        limit = int(os.environ.get("DRAGNET_TEST_DISK_LIMIT", 32 * 1024**2))
        db_file = couch.get(f"/{db}")["sizes"]["file"]
        assert db_file > 2 * limit, (db_file, limit)
        view = bench.BASELINE_VIEW
        spec = bench.LANGUAGES["erlang_baseline"]
        results = {}
        for sc in (scenario.Scenario(None, limits.PROFILES["unlimited"], "warm"),
                   scenario.Scenario(limit, limits.PROFILES["hdd-150iops"], "cold")):
            ddoc = f"t_{sc.profile.name.replace('-', '_')}"
            res = scenario.run_in(sc, couch, url, db, ddoc, lambda: bench.default_build(
                couch, url, db, spec, view, ddoc, "disk"))
            bench.cleanup(couch, db, f"_design/{ddoc}", timeout=60)
            results[sc.profile.name] = res
        fast, slow = results["unlimited"], results["hdd-150iops"]
        if slow["summary"].get("oom_killed"):
            pytest.fail(slow["summary"]["outcome"])
        assert fast["summary"]["ok"] and slow["summary"]["ok"]
        # how much slower, and the read rate against the throttle: benchmarks/speed_targets/scenario.py
        dev = slow["iostat"]["device"]
        io = slow["iostat"]["summary"][dev]
        assert io["read_kb"] > 1000          # the cold build read its data from the throttled device
        own = slow["iostat"]["cgroup"]        # CouchDB's own reads, counted by the throttled group
        assert own["read_bytes"] > 1024**2
        assert slow["scenario"]["enforced"] and slow["memory"]["peak"] is not None
        assert slow["sizes"]["after"]["index"]["file"] > 0
    finally:
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))
    # no cgroup left behind: groups are named for the process that made them, so others' (a crashed
    # earlier run, a bench running beside the tests) are not this run's to judge
    own = f"dragnet-{os.getpid()}"
    for ctrl in (layout.memory, layout.blkio):
        assert own not in _dragnet_groups(ctrl)
        assert own not in before[ctrl]    # else the check above could not tell a leak from a leftover


@pytest.mark.live
def test_a_build_over_its_memory_limit_leaves_couchdb_running_and_says_so(tmp_path):
    """A map that needs more than 8 MiB: the kernel would OOM-kill the group's largest process (beam, whose
    RSS counts although v1 charged it elsewhere); with the group's killer off, dragnet lets it go on."""
    url = _live_env()
    from dragnet.couchdb.client import connect
    couch = connect(url)
    pid = scenario.couch_pid(url)
    if pid is None or scenario.data_dir(couch, pid) is None:
        pytest.skip("CouchDB is not on this machine")
    layout = limits.detect()
    if layout.memory is None or layout.version != 1:
        pytest.skip("needs a writable cgroup v1 memory controller")
    import json
    db = f"dragnet_test_held_{os.getpid()}"
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"_id": f"d{i:05d}", "n": i, "pad": "x" * 2000}) + "\n" for i in range(20)))
    # a map that needs ~40 MB a document: couchjs processes started before the build are charged in the
    # group for what they fault in after entering it
    view = tmp_path / "map.js"
    view.write_text("function (doc) { var a = []; for (var i = 0; i < 1000000; i++) { a.push(i * 1.5); } "
                    "emit(doc._id, a.length); }\n")
    spec = bench.LANGUAGES["javascript"]
    sc = scenario.Scenario(8 * 1024**2, limits.PROFILES["unlimited"], None)
    try:
        ensure.ensure_data(couch, db, data, q=1)
        # couchjs processes that grew before (earlier tests) reuse memory charged elsewhere: CouchDB
        # starts fresh ones, charged in the group from their first page
        import signal
        for child in pidstat.process_tree(pid) - {pid}:
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "couchjs":
                    os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        try:
            res = scenario.run_in(sc, couch, url, db, "t_held", lambda: bench.default_build(
                couch, url, db, spec, view, "t_held", "disk"))
        except DragnetError as exc:        # memory refused in a system call fails the build instead
            assert "at memory limit 8.0 MiB" in str(exc)
        else:
            said = res["summary"].get("outcome") or (res["summary"], res["memory"])
            assert res["summary"].get("oom_held"), said
            assert res["summary"]["oom_killed"] and not res["summary"]["ok"]
            assert "dragnet lifted the limit and CouchDB kept running" in said
        assert couch.get("/")["version"]        # the same CouchDB answers: not killed, not restarted
        assert scenario.couch_pid(url) == pid
    finally:
        bench.cleanup(couch, db, "_design/t_held", timeout=60)
        couch.request("DELETE", f"/{db}", ok=(200, 202, 404))
    assert f"dragnet-{os.getpid()}" not in _dragnet_groups(layout.memory)


SCENARIO_BENCH = Path(__file__).parent / "fixtures" / "scenario-bench"   # a real sweep's 20,000-doc size


def test_report_reads_the_disk_matters_table_from_results_files_as_the_bench_printed_it():
    import json

    from dragnet.report import tables as report

    docs = load.load_results([SCENARIO_BENCH])
    runs, ref = scenario.runs_from_results(docs)
    assert ref == "mem-160.0MiB/unlimited/cold" and len(runs) == 8
    manifest = json.loads((SCENARIO_BENCH / "bench.json").read_text())
    # the same rows and verdict as the bench computed from its manifest while it ran
    key = lambda rows: sorted((r.language, r.scenario, sorted(r.docs_per_sec), r.ratio, r.oom) for r in rows)  # noqa: E731
    from_results, from_manifest = scenario.disk_matters(runs, ref), scenario.disk_matters(manifest["runs"], ref)
    assert key(from_results) == key(from_manifest)
    assert scenario_table.verdict(from_results, ref) == scenario_table.verdict(from_manifest, ref)
    assert "OOM-killed in mem-160.0MiB/hdd-150iops/cold (javascript)" in scenario_table.verdict(from_results, ref)
    # builds in different scenarios are never one median: one group per (language, scenario)
    groups = report.build_report(docs)
    base = {g.storage: g.n for g in groups if g.label == "erlang_baseline"}
    assert base == {"disk mem-160.0MiB/unlimited/cold": 2, "disk mem-160.0MiB/hdd-150iops/cold": 2}
    assert all(g.n == 0 and g.failed == 2 for g in groups if g.label == "javascript")
    assert scenario.runs_from_results([{k: v for k, v in d.items() if k not in ("scenario", "bench")}
                                       for d in docs]) == ([], None)


def test_disk_matters_chart_draws_the_rows(tmp_path):
    pytest.importorskip("matplotlib")
    from dragnet.report import charts as charts

    runs, ref = scenario.runs_from_results(load.load_results([SCENARIO_BENCH]))
    rows = scenario.disk_matters(runs, ref)
    chart = charts.disk_matters(rows, ref, tmp_path / "d.png")
    assert (tmp_path / "d.png").read_bytes()[:4] == b"\x89PNG"
    assert chart.series["ratio"] == [r.ratio for r in rows]
    assert chart.series["oom"] == [r.oom for r in rows]
    ref_row = next(r for r in rows if r.scenario == ref and r.language == "erlang_baseline")
    dots = chart.series["runs"][rows.index(ref_row)]
    assert len(dots) == 2 and min(dots) < 1.0 < max(dots)     # two builds around their own median


def test_cli_report_prints_the_disk_matters_verdict(tmp_path):
    import json

    from click.testing import CliRunner

    from dragnet.cli import main
    res = CliRunner().invoke(main, ["report", str(SCENARIO_BENCH), "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["reference_scenario"] == "mem-160.0MiB/unlimited/cold"
    assert out["verdict"].startswith("OOM-killed in mem-160.0MiB/unlimited/cold (javascript)")
    res = CliRunner().invoke(main, ["report", str(SCENARIO_BENCH), "--format", "markdown"])
    assert "**disk matters?**" in res.output and "| erlang_baseline | disk | mem-160.0MiB/hdd-150iops/cold | 2 |" \
        in res.output


def test_own_memory_sums_couchdbs_rss_peaks_not_the_watchers():
    summary = {"beam": {"rss_kb": {"avg": 200_000.0, "peak": 250_000.0}},
               "couchjs": {"rss_kb": {"avg": 90_000.0, "peak": 100_000.0}},
               "pidstat": {"rss_kb": {"avg": 4_000.0, "peak": 4_000.0}},
               "dragnet": {"rss_kb": {"avg": 80_000.0, "peak": 90_000.0}}}
    assert scenario.own_memory(pidstat.rss_peaks_kb(summary)) == 350_000 * 1024
    assert scenario.own_memory(pidstat.rss_peaks_kb({})) is None and scenario.own_memory(None) is None


def test_memory_advice_names_limits_below_couchdbs_own_memory():
    mib = 1024**2
    ref, tight, roomy = "mem-unlimited/unlimited/cold", "mem-160.0MiB/unlimited/cold", "mem-512.0MiB/unlimited/cold"
    # as the bench's manifest keeps them: RSS peaks per family in kB, the scenario's memory limit
    runs = [{"language": "javascript", "storage": "disk", "scenario": ref, "status": "ok",
             "docs_per_sec_wall": 300.0, "pidstat_peak_rss_kb": {"beam": own * 0.75 / 1024, "couchjs": own * 0.25 / 1024},
             "memory": None} for own in (400 * mib, 420 * mib)]
    runs += [{"language": "javascript", "storage": "disk", "scenario": tight, "status": "oom",
              "docs_per_sec_wall": None, "memory": {"limit": 160 * mib}} for _ in range(2)]
    runs += [{"language": "javascript", "storage": "disk", "scenario": roomy, "status": "ok",
              "docs_per_sec_wall": 290.0, "pidstat_peak_rss_kb": {"beam": 410 * 1024}, "memory": {"limit": 512 * mib}}]
    rows = scenario.disk_matters(runs, ref)
    advice = scenario_table.memory_advice(rows, ref)
    assert advice[0].startswith(f"CouchDB's own memory in {ref} (javascript, disk): 420.0 MiB")
    assert advice[1:] == [f"{tight} (javascript): the limit 160.0 MiB is below CouchDB's own 420.0 MiB; "
                          "its 2 OOM kill(s) say nothing about the disk"]
    # no reference measured: nothing to size from, so nothing is claimed
    assert scenario_table.memory_advice([r for r in rows if r.scenario != ref], ref) == []
    # nor from a reference that ran under a limit itself (its RSS was squeezed by it)
    assert scenario_table.memory_advice(scenario.disk_matters(runs, roomy), roomy) == []


def test_reference_of_manifest_scenarios_matches_reference_label():
    for mems, profs, caches in (([None, 64 * 1024**2], "hdd-150iops,unlimited", ["cold", "warm"]),
                                ([160 * 1024**2], "unlimited,hdd-150iops", ["cold"]),
                                ([64 * 1024**2], "hdd-150iops", [])):
        scs = scenario.expand(mems, limits.parse_profiles(profs), caches)
        assert scenario.reference_of([s.to_json() for s in scs]) == scenario.reference_label(scs)
