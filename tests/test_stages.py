"""dragnet.measure.stages on two real profiles recorded here (CouchDB 3.5.0 release, 3,000 declarations,
q=2, `addview --benchmark --profile`: views/income/map.js on couchjs and views/baseline/map.erl), and
the rules one frame at a time. No server."""

from pathlib import Path

import pytest

from dragnet.measure import profile, stages

DATA = Path(__file__).parent / "data" / "profiles"


def _load(name):
    return profile.read_folded(DATA / f"{name}.folded.gz")


@pytest.mark.parametrize("name", ["decl-couchjs-3.5.0", "decl-erlang-3.5.0"])
def test_every_sample_has_one_stage_and_the_shares_add_up(name):
    stacks = _load(name)
    sh = stages.shares(stacks)
    assert sh.total == sum(stacks.values()) > 1000
    assert set(sh.samples) <= set(stages.STAGES)
    assert sum(sh.share(s) for s in sh.samples) == pytest.approx(1.0)
    assert sum(sh.beam_share(s) for s in sh.samples if s != "query_server") == pytest.approx(1.0)
    assert 0 < sh.named < sh.beam      # the JIT's map named some of beam's stacks, not all


def test_couchjs_build_puts_a_quarter_or_more_in_the_query_server_and_gc_first_in_beam():
    sh = stages.shares(_load("decl-couchjs-3.5.0"))
    assert 0.2 < sh.share("query_server") < 0.5
    beam = {s: sh.beam_share(s) for s in sh.samples if s != "query_server"}
    # the dirty CPU schedulers' full GCs, as the issue's hand-taken profile found (37-39% of the busy CPU)
    assert max(beam, key=beam.get) == "gc"
    assert sh.samples.get("map_fun", 0) == 0
    assert sh.samples["encode"] > 0 and sh.samples["read"] > 0


def test_erlang_view_build_has_no_query_server_and_names_its_map_function():
    sh = stages.shares(_load("decl-erlang-3.5.0"))
    assert "query_server" not in sh.samples
    assert sh.samples["map_fun"] > 0
    assert sh.share("gc") > sh.share("map_fun")


def test_by_thread_drops_scheduler_numbers():
    threads = stages.by_thread(_load("decl-couchjs-3.5.0"))
    assert threads["couchjs"] > 0 and threads["beam.smp/dirty_cpu_sch"] > threads["beam.smp/scheduler"] > 0
    assert not any(k.split("/")[-1][:1].isdigit() for k in threads)


@pytest.mark.parametrize("stack,stage", [
    ("couchjs;couchjs;[libmozjs.so]", "query_server"),
    ("beam.smp;1_scheduler;$couch_os_process:prompt/2;erts_garbage_collect_nobump", "gc_prompt"),
    ("beam.smp;1_scheduler;$couch_mrview_updater:map_docs/2;$couch_native_process:handle_call/3", "map_fun"),
    ("beam.smp;1_scheduler;$couch_work_queue:queue/2", "queues"),
    # the writer reads its B-tree's nodes too: the outer function decides
    ("beam.smp;1_scheduler;$couch_mrview_updater:write_results/2;$couch_btree:query_modify/4;"
     "$couch_file:pread_term/2;snappy_decompress", "write"),
    ("beam.smp;1_scheduler;$couch_index_updater:'-update/3-fun-4-'/8;$couch_bt_engine:fold_changes/5;"
     "$couch_btree:stream_kp_node/7;snappy::RawUncompress", "read"),
    ("beam.smp;2_scheduler;$couch_mrview_updater:map_docs/2;$couch_query_servers:map_doc_raw/2;enc_string", "encode"),
    ("beam.smp;1_scheduler;[beam.smp];__sched_yield", "spin"),
    ("beam.smp;1_scheduler;$erts_beamasm:normal_exit/0;$lists:zip/2", "erlang_other"),
    ("beam.smp;2_dirty_cpu_sch;[beam.smp]", "gc"),
    ("beam.smp;7_dirty_io_sche;[beam.smp]", "file_io"),
    # OTP 26+ names beam's threads otherwise (CouchDB 3.5.2 on trixie, OTP 27)
    ("beam.smp;erts_dcpus_2;[beam.smp]", "gc"),
    ("beam.smp;erts_dios_13;[beam.smp]", "file_io"),
    ("beam.smp;erts_sched_1;[beam.smp]", "unnamed"),
    ("beam.smp;1_scheduler;[beam.smp]", "unnamed"),
    ("beam.smp;1_scheduler;$global::arith_compare_shared", "unnamed"),
])
def test_stage_of_one_stack(stack, stage):
    assert stages.stage_of(stack) == stage


def test_a_rule_naming_an_unknown_stage_is_refused():
    with pytest.raises(ValueError, match="unknown stage 'nap'"):
        stages.Rule("nap", ("x",))


def test_every_stage_has_a_label():
    assert set(stages.LABELS) == set(stages.STAGES)


def test_as_dict_gives_cpu_seconds_and_the_share_of_the_build():
    sh = stages.shares({"beam.smp;1_dirty_cpu_sch;[beam.smp]": 300, "couchjs;couchjs;[x]": 100})
    d = sh.as_dict(0.002, core_s=4.0)      # 2 s build on 2 cores
    assert d["gc"] == {"samples": 300, "share": 0.75, "beam_share": 1.0, "cpu_s": 0.6, "build_share": 0.15}
    assert d["query_server"]["beam_share"] is None and d["query_server"]["build_share"] == 0.05
    assert "cpu_s" not in sh.as_dict()["gc"]


def test_an_otp27_profile_puts_the_dirty_schedulers_in_gc_and_file_io():
    """A CouchDB 3.5.2 declarations build on couchjs (docker, OTP 27: threads erts_sched_N, erts_dcpus_N,
    erts_dios_N), recorded for docs/studies/where-the-time-goes."""
    folded = sorted((Path(__file__).parent.parent / "docs" / "studies" / "where-the-time-goes" / "folded" /
                     "decl5k-prof").glob("profile-decl5k-javascript-*.folded.gz"))[-1]
    stacks = profile.read_folded(folded)
    sh = stages.shares(stacks)
    dcpus = sum(n for st, n in stacks.items() if st.split(";")[1].startswith("erts_dcpus"))
    assert dcpus > 0 and sh.samples.get("gc", 0) >= dcpus * 0.9
    threads = stages.by_thread(stacks)
    assert threads["beam.smp/dirty_cpu_sch"] == dcpus and "beam.smp/scheduler" in threads
