"""dragnet.measure.cpu.core_time: a build's interval × cores from the kernel's accounting (pure, no server),
checked against the per-process accounting (`cpu.by_process`) of builds recorded on a real CouchDB 3.5.0."""

from pathlib import Path

import pytest

from dragnet.measure import cpu
from dragnet.report import share as sh
from dragnet.results.load import load_results

RECORDED = Path(__file__).resolve().parent.parent / "docs" / "studies" / "where-the-time-goes" / "kernel-split"
TICK = 1 / cpu.CLK_TCK


def test_parse_machine_counts_busy_without_idle_and_iowait():
    text = "cpu  100 5 50 1000 20 3 2 7 9 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"
    assert cpu.parse_machine(text) == (100 + 5 + 50 + 3 + 2 + 7, 100 + 5 + 50 + 1000 + 20 + 3 + 2 + 7)
    assert cpu.parse_machine("intr 1 2\n") is None


def test_parse_cpu_max_gives_cores_or_none():
    assert cpu.parse_cpu_max("150000 100000\n") == 1.5
    assert cpu.parse_cpu_max("max 100000\n") is None and cpu.parse_cpu_max("") is None


def test_cores_of_this_process_is_its_affinity_at_most():
    import os

    assert 0 < cpu.cores_of(os.getpid()) <= len(os.sched_getaffinity(0))


def _rec(**kw):
    rec = {"cpu_s": 2.0, "interval_s": 1.0, "wait_s": 0.3, "cores": 4,
           "by_process": {"beam.smp": 1.2, "couchjs": 0.5, "memsup": 0.1, "erl_child_setup": 0.2},
           "query_servers": {"cpu_s": 0.6}, "machine_busy_s": 3.0}
    return rec | kw


def test_core_time_adds_up_and_caps_other_programs_at_what_is_left():
    ct = cpu.core_time(_rec())
    assert (ct.qs_s, ct.beam_s, ct.helpers_s) == (0.6, 1.2, 0.1)
    assert ct.other_s == pytest.approx(1.0) and ct.idle_s == pytest.approx(4.0 - 1.9 - 1.0)
    assert sum(ct.seconds().values()) == pytest.approx(ct.total_s)
    # other programs ran on cores CouchDB could not use: no more than CouchDB's cores left
    busy = cpu.core_time(_rec(cores=2, machine_busy_s=7.0))
    assert busy.other_s == pytest.approx(2.0 - 1.9) and busy.idle_s == 0.0
    assert cpu.core_time(_rec(), in_beam=True).qs_s is None
    # the record's cores first, else the caller's (an older file: the machine's)
    assert cpu.core_time(_rec(cores=None), cores=2).cores == 2.0


def test_core_time_says_why_not():
    assert "no kernel accounting" in cpu.core_time(None)
    assert "no kernel accounting" in cpu.core_time({"cpu_s": 1.0})
    assert "no query-server accounting" in cpu.core_time(_rec(query_servers=None))
    assert "no interval" in cpu.core_time(_rec(interval_s=0))


def _recorded():
    docs = load_results([RECORDED])
    assert len(docs) >= 8
    return docs


def test_recorded_builds_split_agrees_with_their_by_process_accounting():
    for doc in _recorded():
        rec, where = doc["cpu"], doc["_source"]
        s = sh.split_of(doc)
        assert isinstance(s, cpu.CoreTime), where
        # the parts fill the interval × cores exactly, with a machine figure for other programs
        assert s.other_s is not None and sum(v or 0.0 for v in s.seconds().values()) == pytest.approx(s.total_s), where
        assert s.total_s == pytest.approx(rec["interval_s"] * rec["cores"]), where
        # beam is by_process's beam.smp; the helpers are its helper processes
        assert s.beam_s == rec["by_process"]["beam.smp"] > 0, where
        assert s.helpers_s == pytest.approx(sum(v for k, v in rec["by_process"].items() if k in cpu.TREE_HELPERS))
        # schedstat's query servers against /proc's clock ticks: within a tick per counter per process
        tree = cpu.tree_query_servers_s(rec)
        if s.qs_s is not None:
            procs = len([k for k in rec["by_process"] if k != "beam.smp" and k not in cpu.TREE_HELPERS])
            assert s.qs_s == pytest.approx(tree, abs=2 * TICK * procs + TICK), where
        # CouchDB's part is what the whole tree used (/proc or its cgroup), to the ticks
        couch = s.beam_s + s.helpers_s + (s.qs_s or tree)
        assert couch == pytest.approx(rec["cpu_s"], abs=2 * TICK * len(rec["by_process"]) + TICK), where
        # other programs: the machine's busy time less CouchDB's, as far as it fits
        assert s.other_s == pytest.approx(min(rec["machine_busy_s"] - max(couch, rec["cpu_s"]),
                                              s.total_s - (s.beam_s + s.helpers_s + (s.qs_s or 0))), abs=1e-6)


def test_recorded_bench_shows_one_split_line_per_engine():
    loads = sh.workloads(_recorded())
    text = "\n".join(sh.lines(loads))
    for engine in ("javascript", "ceiling", "erlang"):
        (line,) = [x for x in text.splitlines() if x.strip().startswith(f"{engine}: ")]
        assert "beam " in line and "of " in line and "× 2 cores" in line
    assert "erlang: beam" in text       # a view inside beam has no query-server part
    js = next(e for w in loads for e in w.engines if e.engine == "javascript")
    assert sh.to_json(loads)[0]["engines"][[e.engine for e in loads[0].engines].index("javascript")]["split"] == \
        js.split and js.split["qs"] > 0 and js.split["beam"] > 0


def test_table_cpu_columns_are_the_kernels_share_of_a_core():
    from dragnet.measure.stats import median
    from dragnet.report import tables

    docs = _recorded()
    groups = {g.label: g for g in tables.build_report(docs)}
    js = [d["cpu"] for d in docs if d["bench"]["language"] == "javascript"]
    assert groups["javascript"].beam_cpu == pytest.approx(
        median([100 * c["by_process"]["beam.smp"] / c["interval_s"] for c in js]))
    assert groups["javascript"].qs_cpu == pytest.approx(
        median([100 * c["query_servers"]["cpu_s"] / c["interval_s"] for c in js]))
    assert groups["erlang"].qs_cpu is None and groups["erlang"].beam_cpu > 0


def test_one_builds_summary_has_its_split_line_and_an_older_file_none():
    import json

    from dragnet.report.render import build_text

    doc = json.loads((RECORDED / "000-disk-r0-javascript.json").read_text())
    line = build_text.format_split(doc)
    assert line.startswith("where the time goes: query servers ") and "× 2 cores" in line
    assert "median" not in line
    doc.pop("cpu")
    assert build_text.format_split(doc) is None


def test_usage_keeps_the_machines_busy_time_and_cores_over_the_interval():
    a = cpu.Snapshot(0.0, 1.0, None, None, 1.0, 0.5, 0.0, 10.0, 3, machine_busy_s=100.0, machine_total_s=400.0,
                     cores=2.0)
    b = cpu.Snapshot(2.0, 2.5, None, None, 2.0, 2.0, 0.0, 11.0, 3, machine_busy_s=103.5, machine_total_s=404.0,
                     cores=2.0)
    u = cpu.usage(a, b)
    assert (u["machine_busy_s"], u["machine_total_s"], u["cores"]) == (3.5, 4.0, 2.0)
    old = cpu.usage(cpu.Snapshot(0.0, 1.0, None, None, 1.0, 0.5, None, None, 3),
                    cpu.Snapshot(2.0, 2.5, None, None, 2.0, 2.0, None, None, 3))
    assert old["machine_busy_s"] is None and old["cores"] is None


def test_a_snapshot_of_this_process_reads_the_machine_and_its_cores():
    import os

    s = cpu.Snapshot.take(os.getpid())
    # a CPU quota makes cores a fraction (the suite at 30% of a core: 0.3)
    assert 0 < s.machine_busy_s <= s.machine_total_s and 0 < s.cores <= len(os.sched_getaffinity(0))


def test_cores_of_a_process_in_a_group_with_a_cpu_quota(tmp_path):
    import os

    pid = os.getpid()
    (tmp_path / "proc" / str(pid)).mkdir(parents=True)
    (tmp_path / "proc" / str(pid) / "cgroup").write_text("0::/dragnet-test\n")
    (tmp_path / "sys" / "dragnet-test").mkdir(parents=True)
    (tmp_path / "sys" / "dragnet-test" / "cpu.max").write_text("50000 100000\n")
    assert cpu.cores_of(pid, str(tmp_path / "proc"), str(tmp_path / "sys")) == 0.5
    (tmp_path / "sys" / "dragnet-test" / "cpu.max").write_text("max 100000\n")
    assert cpu.cores_of(pid, str(tmp_path / "proc"), str(tmp_path / "sys")) == len(os.sched_getaffinity(pid))


def test_split_json_of_one_build_has_its_seconds_or_why_not():
    import json

    doc = json.loads((RECORDED / "000-disk-r0-javascript.json").read_text())
    out = sh.split_json(doc)
    assert sum(v for v in out["seconds"].values() if v) == pytest.approx(out["interval_s"] * out["cores"])
    assert out["fractions"]["beam"] == pytest.approx(out["seconds"]["beam"] / (out["interval_s"] * out["cores"]))
    doc.pop("cpu")
    assert sh.split_json(doc)["why"].startswith(sh.NO_KERNEL)


@pytest.mark.parametrize("name, kind", [("1_scheduler", "scheduler"), ("2_dirty_cpu_sch", "dirty_cpu"),
                                        ("10_dirty_io_sche", "dirty_io"), ("erts_dios_3", "dirty_io"),
                                        ("erts_sched_2", "scheduler"), ("aux", "aux"), ("1_poll", "poll"),
                                        ("beam.smp", "other"), ("sys_sig_dispatc", "other")])
def test_beams_threads_are_known_by_their_names(name, kind):
    assert cpu.beam_thread_kind(name) == kind


def test_beams_cpu_per_thread_kind_counts_each_threads_delta_and_new_threads_whole():
    a = cpu.Snapshot(0.0, 1.0, None, None, 1.0, 0.0, None, None, 1, (), ((1, 1_000_000_000, 0), (2, 500_000_000, 0)),
                     beam_threads=((1, "scheduler"), (2, "dirty_io")))
    b = cpu.Snapshot(1.0, 2.0, None, None, 2.0, 0.0, None, None, 1, (),
                     ((1, 1_800_000_000, 0), (2, 600_000_000, 0), (3, 300_000_000, 0), (9, 5_000_000_000, 0)),
                     beam_threads=((1, "scheduler"), (2, "dirty_io"), (3, "scheduler")))
    assert cpu.beam_thread_cpu(a, b) == pytest.approx({"scheduler": 1.1, "dirty_io": 0.1})
    assert cpu.usage(a, b)["beam_threads"] == pytest.approx({"scheduler": 1.1, "dirty_io": 0.1})
    assert "beam_threads" not in cpu.usage(a, cpu.Snapshot(1.0, 2.0, None, None, 2.0, 0.0, None, None, 1))
