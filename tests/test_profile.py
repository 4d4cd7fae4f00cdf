"""dragnet.measure.profile: perf script folded into stacks, folded files, when perf cannot run (no server)."""

import gzip

import pytest

from dragnet.measure import profile

SCRIPT = """\
beam.smp 100/100    2004008 
\t    7fccc6436000 $couch_btree:modify_node/4+0x12 (/tmp/perf-100.map)
\t    7fccc6436100 $couch_mrview_updater:write_results/2 (/tmp/perf-100.map)
\t          255110 [unknown] ([unknown])

1_dirty_cpu_sch 100/102    2004008 
\t          28871 [unknown] (/opt/couchdb/erts-13.1.5/bin/beam.smp)

couchjs 200/200    1000000 
\t          1af857 _PyObject;Malloc (/lib/libx.so)
\t    55cf02e9d470 [unknown] ([unknown])
\t    55cf02e9d471 [unknown] ([unknown])
\t    55cf02e9d472 [unknown] (//anon)
\t    55cf02e9d473 [unknown] ([perf-200.map])

python3 300/300    2004008 
\t          fc382 _PyEval_EvalFrameDefault (/lib/libpython3.so)

1_dirty_cpu_sch 100/102    2004008 
\t          28871 [unknown] (/opt/couchdb/erts-13.1.5/bin/beam.smp)
"""


def test_fold_keeps_the_tree_roots_stacks_at_process_then_thread_and_counts_the_rest_as_dropped():
    f = profile.fold(SCRIPT.splitlines(True), pids={100, 200}, names={100: "beam.smp"})
    assert f.samples == 4 and f.dropped == 1
    assert f.period_ns == 3 * 2004008 + 1000000
    assert f.stacks == {
        # root first; the JIT's names without their offsets
        "beam.smp;beam.smp;[unknown];$couch_mrview_updater:write_results/2;$couch_btree:modify_node/4": 1,
        "beam.smp;1_dirty_cpu_sch;[beam.smp]": 2,
        # a run of unnamed frames is one frame; a JIT's anonymous code is [jit], not a pid; ';' never splits a frame
        "couchjs;couchjs;[jit];[anon];[unknown];_PyObject:Malloc": 1,
    }
    assert f.by_pid == {100: 3, 200: 1}


def test_fold_without_names_takes_the_main_threads_name_and_without_pids_keeps_all():
    f = profile.fold(SCRIPT.splitlines(True))
    assert f.dropped == 0 and f.samples == 5
    assert "python3;python3;_PyEval_EvalFrameDefault" in f.stacks
    # pid 100's main thread is named beam.smp in its own sample
    assert f.stacks["beam.smp;1_dirty_cpu_sch;[beam.smp]"] == 2


def test_folded_files_round_trip_heaviest_first_and_bytes_do_not_depend_on_time(tmp_path):
    stacks = {"a;b": 3, "a;c": 7}
    p1 = profile.write_folded(stacks, tmp_path / "one.folded.gz")
    p2 = profile.write_folded(stacks, tmp_path / "two.folded.gz")
    assert p1.read_bytes() == p2.read_bytes()
    assert gzip.decompress(p1.read_bytes()).decode() == "a;c 7\na;b 3\n"
    assert profile.read_folded(p1) == stacks


def test_a_bad_folded_line_is_an_error_naming_file_and_line(tmp_path):
    p = tmp_path / "bad.folded"
    p.write_text("a;b 3\nno count here\n")
    with pytest.raises(ValueError, match=r"bad.folded:2: not a folded line"):
        profile.read_folded(p)


@pytest.mark.parametrize("perf,paranoid,root,expected", [
    (None, -1, True, "perf not found"),
    ("/usr/bin/perf", 2, False, "perf_event_paranoid is 2"),
    ("/usr/bin/perf", 2, True, None),          # root may sample system-wide whatever the setting
    ("/usr/bin/perf", 0, False, None),
    ("/usr/bin/perf", None, False, None),      # no such file: perf itself will say
])
def test_why_not_gives_one_line_naming_what_is_missing(perf, paranoid, root, expected):
    why = profile.why_not(perf, paranoid, root)
    if expected is None:
        assert why is None
    else:
        assert expected in why and "\n" not in why and "the other figures are still reported" in why


def test_jit_map_is_found_inside_a_containers_root_under_its_namespace_pid(tmp_path):
    proc = tmp_path / "proc"
    (proc / "4242" / "root" / "tmp").mkdir(parents=True)
    (proc / "4242" / "status").write_text("Name:\tbeam.smp\nNSpid:\t4242\t17\n")
    assert profile.jit_map(4242, proc=str(proc)) is None
    (proc / "4242" / "root" / "tmp" / "perf-17.map").write_text("0 1 $a:b/0\n")
    assert profile.jit_map(4242, proc=str(proc)) == proc / "4242" / "root" / "tmp" / "perf-17.map"


def test_a_couchdb_elsewhere_or_out_of_sight_gets_one_line_and_no_perf():
    from dragnet.index.build_profile import BuildProfile

    far = BuildProfile("http://admin:pw@couch.example.org:5984", None, bound_s=10).start()
    assert far.profiler is None
    assert far.record(set(), None, "x.folded.gz") == {
        "absent": "CouchDB at couch.example.org is not on this machine: no profile; the other figures are still reported"}
    hidden = BuildProfile("http://127.0.0.1:5984", None, bound_s=10).start()
    assert hidden.profiler is None and "not visible on this machine" in hidden.record(set(), None, "x")["absent"]


def test_the_folded_files_name_says_what_was_built():
    from dragnet.index.build_profile import folded_name

    name = folded_name("my db/x", "javascript")
    assert name.startswith("profile-my-db-x-javascript-") and name.endswith("Z.folded.gz")
