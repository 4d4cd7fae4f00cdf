"""beam's activity: the probe's output parsed and summarised (recorded on CouchDB 3.5.0), the probe's own
command line, where it can run, and the pause in memory-limit scenarios. No server."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragnet.measure import beam
from dragnet.measure import beam_probe

RECORDED = Path(__file__).parent / "fixtures" / "beam" / "local-couchjs-20k.txt"
NODE = "dragnet34485@127.0.0.1"


@pytest.fixture(scope="module")
def parsed() -> dict:
    return beam.parse(RECORDED.read_text())


def test_recorded_build_parses_into_one_node(parsed):
    rec = parsed[NODE]
    assert set(parsed) == {NODE}
    assert rec["otp"] == "25" and rec["samples"] >= 2 and rec["wall_s"] > 1
    # the release's threads: 2 schedulers on this 2-core machine, 16 dirty I/O schedulers (vm.args +SDio 16)
    assert rec["threads"]["scheduler"] == 2 and rec["threads"]["dirty_io_scheduler"] == 16
    # msacc counters converted from perf-counter ticks to µs: a thread cannot be in its states longer than
    # the probe watched (a little slack: the counters are read a moment after the last sample)
    per_thread_s = sum(rec["msacc_us"]["scheduler"].values()) / 1e6 / rec["threads"]["scheduler"]
    assert rec["wall_s"] * 0.9 < per_thread_s < rec["wall_s"] * 1.1
    assert rec["gc"]["count"] > 1000     # 20,000 documents: a GC per document at least (3.5.0)


def test_recorded_build_reductions_name_the_view_builders_processes(parsed):
    kinds = beam.reductions_by_kind(parsed[NODE])
    for kind in ("loader", "mapper", "writer", "query server", "couch_file", "queues"):
        assert kinds.get(kind, 0) > 0, (kind, kinds)
    # the loader (documents read, with its GC after each) outweighs the mapper, which only passes them on
    assert kinds["loader"] > kinds["mapper"]
    unsampled = beam.reductions_unsampled(parsed[NODE])
    assert unsampled is not None and 0 <= unsampled < parsed[NODE]["reductions_total"]
    assert kinds.get(beam.UNSAMPLED, 0) == unsampled
    assert sum(kinds.values()) == parsed[NODE]["reductions_total"]     # the kinds cover the node's exact total


def test_summary_shares_and_busy_wait_apart(parsed):
    s = beam.summary({"nodes": parsed})
    assert s["work_s"] > 0 and s["busy_wait_s"] > 0
    assert beam.BUSY_WAIT not in s["activities"]
    assert sum(s["activities"].values()) == pytest.approx(1, abs=1e-3)
    assert sum(s["kinds"].values()) == pytest.approx(1, abs=1e-3)
    assert list(s["activities"].values()) == sorted(s["activities"].values(), reverse=True)
    assert set(s["activities"]) <= {a for a, _ in beam.ACTIVITIES}
    assert s["nodes"][NODE]["work_s"] == s["work_s"]


def test_activity_seconds_sum_the_right_thread_types():
    rec = {"msacc_us": {"scheduler": {"emulator": 1_000_000, "gc": 500_000, "other": 9_000_000, "sleep": 5},
                        "dirty_io_scheduler": {"emulator": 250_000, "sleep": 7},
                        "dirty_cpu_scheduler": {"gc": 500_000, "emulator": 100_000}}}
    secs = beam.activity_seconds(rec)
    assert secs == {"Erlang code": 1.1, "garbage collection": 1.0, "file I/O": 0.25, beam.BUSY_WAIT: 9.0}
    assert beam.work(secs) == {"Erlang code": 1.1, "garbage collection": 1.0, "file I/O": 0.25}


def test_the_samples_round_trips_are_read_when_recorded():
    text = "ready\nnode\tn@h\t1000000\t3\t25\t1000\t2500\nend\n"
    assert beam.parse(text)["n@h"]["sampling_s"] == 0.0025
    assert "sampling_s" not in beam.parse("ready\nnode\tn@h\t1000000\t3\t25\t1000\nend\n")["n@h"]


def test_a_node_it_could_not_read_is_kept_apart():
    text = "ready\nerror\tnosuch@127.0.0.1\tcannot connect\nend\n"
    parsed = beam.parse(text)
    assert parsed == {"nosuch@127.0.0.1": {"error": "cannot connect"}}
    assert beam.summary({"nodes": parsed}) is None
    assert beam.why_none({"absent": None, "nodes": parsed}) == "nosuch@127.0.0.1: cannot connect"
    assert beam.why_none(beam.absent("paused")) == "paused"


@pytest.mark.parametrize("key,kind", [
    ("couch_index_updater:update/3", "loader"),
    ("couch_mrview_updater:map_docs/2", "mapper"),
    ("couch_mrview_updater:-map_docs/2-fun-0-/2", "mapper"),
    ("couch_mrview_updater:write_results/2", "writer"),
    ("couch_mrview_updater:accumulate_writes/3", "writer"),
    ("couch_os_process:init/1", "query server"),
    ("couch_native_process:init/1", "query server"),
    ("couch_file:init/1", "couch_file"),
    ("couch_index_updater:init/1", "couch_index"),
    ("couch_work_queue:init/1", "queues"),
    ("mochiweb_acceptor:init/4", "http"),
    ("rexi_server:init/1", "cluster"),
    ("erpc:execute_call/4", "probe"),
    ("erts_dirty_process_signal_handler:start/0", "runtime"),
    ("couch_stats_server:init/1", "stats and events"),
    ("couch_server:init/1", beam.OTHER),
])
def test_kind_of(key, kind):
    assert beam.kind_of(key) == kind


@pytest.mark.parametrize("text,message", [
    ("ready\nnode\tn@h\t1\t1\t25\t1000\n", "ends before its last line"),
    ("ready\nnode\tn@h\tone\t1\t25\t1000\nend\n", "line 2: malformed 'node'"),
    ("ready\nmsacc\tn@h\tscheduler\t1\temulator\nend\n", "line 2: malformed 'msacc'"),
    ("ready\nwhat\tn@h\nend\n", "line 2: unknown record 'what'"),
])
def test_bad_probe_output_says_where(text, message):
    with pytest.raises(beam.ProbeOutputError, match=message):
        beam.parse(text)


def test_merge_weights_activities_by_work():
    a = {"work_s": 3.0, "busy_wait_s": 1.0, "activities": {"Erlang code": 1.0}, "kinds": {"loader": 1.0}}
    b = {"work_s": 1.0, "busy_wait_s": 3.0, "activities": {"garbage collection": 1.0}, "kinds": {"mapper": 1.0}}
    m = beam.merge([a, None, b])
    assert m["builds"] == 2 and m["work_s"] == 2.0 and m["busy_wait_s"] == 2.0
    assert m["activities"] == {"Erlang code": 0.75, "garbage collection": 0.25}
    assert m["kinds"] == {"loader": 0.5, "mapper": 0.5}
    assert beam.merge([None]) is None


def test_probe_argv_holds_no_cookie():
    argv = beam_probe.probe_argv("/rel/erts-13.1.5/bin/erl", "/rel/releases/start_clean")
    assert "-setcookie" not in argv and "-hidden" in argv
    assert argv[argv.index("-dist_listen") + 1] == "false"
    name = argv[argv.index("-name") + 1]
    assert name.startswith("dragnet_probe_") and name.endswith("@127.0.0.1")
    assert name != beam_probe.probe_argv("erl", "boot")[argv.index("-name") + 1]   # unique per probe


def test_release_erl_reads_start_erl_data(tmp_path):
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "start_erl.data").write_text("13.1.5 3.5.0\n")
    erl, boot = beam_probe.release_erl(tmp_path)
    assert erl == str(tmp_path / "erts-13.1.5" / "bin" / "erl")
    assert boot == str(tmp_path / "releases" / "start_clean")


def test_no_probe_for_a_couchdb_on_another_machine():
    targets, why = beam_probe.find_targets("http://admin:secret@db.example.org:5984")
    assert targets == [] and why == "CouchDB is not on this machine"


def test_no_probe_for_a_couchdb_dragnet_did_not_start(tmp_path):
    targets, why = beam_probe.find_targets("http://127.0.0.1:5999", env={"DRAGNET_STATE_DIR": str(tmp_path)})
    assert targets == [] and "dragnet did not start this CouchDB" in why


def test_a_paused_probe_records_why():
    rec = beam_probe.BuildBeam("http://127.0.0.1:1", paused="paused here").start().stop()
    assert rec == beam.absent("paused here")


def test_an_interrupt_while_a_probe_starts_leaves_abort_clean(monkeypatch):
    # SIGTERM inside Popen: the probe is bound but has no process; the build's cleanup must still run
    from dragnet.signals import Terminated

    def interrupted(*_args, **_kwargs):
        raise Terminated(15)

    monkeypatch.setattr(beam_probe, "release_erl", lambda home: ("/bin/false", "start_clean"))
    monkeypatch.setattr(beam_probe.subprocess, "Popen", interrupted)
    bb = beam_probe.BuildBeam("http://127.0.0.1:1", paused="x")
    bb.targets, bb.why = [beam_probe.Target("local", (NODE,), home="/nowhere")], None
    with pytest.raises(Terminated):
        bb.start()
    assert len(bb.probes) == 1 and bb.probes[0].proc is None
    bb.abort()
    with pytest.raises(beam_probe.ProbeFailed, match="did not start"):
        bb.probes[0].stop()


def test_memory_limit_scenarios_pause_the_probe():
    from dragnet.axes.scenario import Scenario
    from dragnet.axes.scenario_axis import PAUSED, ScenarioAxis

    from dragnet.couchdb import limits

    limited = Scenario(memory=64 * 2**20, cache="warm")
    free = Scenario(profile=limits.PROFILES["san-600iops"], cache="warm")
    axis = ScenarioAxis([limited, free])
    assert axis.build_keywords({"scenario": limited.label}) == {"iostat": False, "beam": PAUSED}
    assert axis.build_keywords({"scenario": free.label}) == {"iostat": False}


def test_container_node_name_comes_from_nodename():
    from dragnet.couchdb.docker import erlang_node

    assert erlang_node({"Config": {"Env": ["PATH=/bin", "NODENAME=127.0.0.1"]}}) == "couchdb@127.0.0.1"
    assert erlang_node({"Config": {"Env": ["PATH=/bin"]}}) is None


def test_older_data_keeps_nonode(tmp_path):
    from dragnet.couchdb.docker import NODE_MARKER, unnamed_data

    assert not unnamed_data(None, 1, "tmpfs", None)
    assert not unnamed_data(None, 1, "disk", str(tmp_path))         # empty: a new node
    (tmp_path / "_dbs.couch").write_bytes(b"")
    assert unnamed_data(None, 1, "disk", str(tmp_path))             # shards made under nonode@nohost
    (tmp_path / NODE_MARKER).write_text("couchdb@127.0.0.1\n")
    assert not unnamed_data(None, 1, "disk", str(tmp_path))


def test_beams_cpu_by_activity_is_the_kernels_per_thread_cpu_in_msaccs_shares():
    msacc = {"scheduler": {"emulator": 3_000_000, "port": 1_000_000, "sleep": 9_000_000},
             "dirty_io_scheduler": {"emulator": 5_000_000, "sleep": 50_000_000},   # waits for the disk: thread time
             "dirty_cpu_scheduler": {"sleep": 4_000_000}}
    secs = beam.cpu_activities(msacc, {"scheduler": 2.0, "dirty_io": 0.3, "dirty_cpu": 0.1, "other": 0.05})
    assert secs == pytest.approx({"Erlang code": 1.5, "port I/O": 0.5, "file I/O": 0.3, "dirty_cpu threads": 0.1,
                                  "other beam threads": 0.05})
    # a scheduler's busy wait is CPU the kernel counts: kept, under its own name
    spin = beam.cpu_activities({"scheduler": {"emulator": 1, "other": 3}}, {"scheduler": 4.0})
    assert spin == pytest.approx({"Erlang code": 1.0, beam.BUSY_WAIT: 3.0})


def test_summary_with_the_builds_kernel_accounting_gives_beams_cpu_by_activity(parsed):
    cpu = {"beam_threads": {"scheduler": 1.2, "dirty_io": 0.2, "aux": 0.1}}
    s = beam.summary({"nodes": parsed}, cpu)
    assert s["cpu_s"] == pytest.approx(1.5) and sum(s["cpu_activities"].values()) == pytest.approx(1.0, abs=1e-3)
    io = {st: us for st, us in parsed[NODE]["msacc_us"]["dirty_io_scheduler"].items() if st != "sleep" and us}
    # the dirty I/O threads' 0.2 s in the shares msacc saw them busy in (their busy wait apart)
    file_io = 0.2 * (io.get("emulator", 0) + io.get("nif", 0)) / sum(io.values())
    assert s["cpu_activities"]["file I/O"] == pytest.approx(file_io / 1.5, abs=1e-3)
    assert "cpu_activities" not in beam.summary({"nodes": parsed})     # older results: thread time only
    merged = beam.merge([s, s])
    assert merged["cpu_s"] == pytest.approx(1.5) and merged["cpu_activities"] == s["cpu_activities"]
    assert "cpu_activities" not in beam.merge([s, beam.summary({"nodes": parsed})])


def test_msacc_in_windows_scales_its_thread_time_to_the_build_and_keeps_the_shares(parsed):
    (name, node), = parsed.items()
    whole = beam.summary({"nodes": parsed, "period_ms": 200})
    on = node["msacc_on_s"]
    assert on == pytest.approx(beam.msacc_on_s(node)) and on > 0
    # the same counters, said to cover a tenth of a build ten times as long as msacc was on
    windowed = {"nodes": {name: dict(node, wall_s=10 * on)}, "period_ms": 200, "msacc_on_ms": 20}
    s = beam.summary(windowed)
    assert s["msacc_coverage"] == pytest.approx(0.1, abs=1e-3)
    assert s["work_s"] == pytest.approx(10 * whole["work_s"], rel=1e-3) and s["activities"] == whole["activities"]
    assert whole["msacc_coverage"] == 1.0


def test_the_probes_own_cpu_is_split_at_the_builds_end():
    from types import SimpleNamespace as P

    # whole 0.50 s: 0.35 s to start, 0.04 s during the build, 0.11 s collecting the figures and exiting
    a = P(cpu_s=0.50, cpu_at_begun=0.35, cpu_at_stop=0.39)
    got = beam_probe.own_cpu([a])
    assert got == {"cpu_s": 0.5, "cpu_during_build_s": pytest.approx(0.04), "cpu_after_build_s": pytest.approx(0.11)}
    # two probes (a cluster) sum; one without the kernel's figures (docker) makes the sum unknown
    b = P(cpu_s=0.40, cpu_at_begun=0.30, cpu_at_stop=0.31)
    assert beam_probe.own_cpu([a, b])["cpu_during_build_s"] == pytest.approx(0.05)
    assert beam_probe.own_cpu([a, P(cpu_s=None, cpu_at_begun=None, cpu_at_stop=None)]) == \
        {"cpu_s": None, "cpu_during_build_s": None, "cpu_after_build_s": None}
