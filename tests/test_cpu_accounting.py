"""dragnet.measure.cpu: parsers over real /proc text shapes, and a real process tree whose child exits."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dragnet.measure import cpu


def test_parse_pid_stat_with_spaces_in_comm():
    text = "1234 (Web Content) S 77 1234 1234 0 -1 4194560 100 0 0 0 250 40 7 3 20 0 5 0 1000 0 0"
    assert cpu.parse_pid_stat(text) == (77, 250, 40, 7, 3)


def test_parse_pressure_and_steal():
    assert cpu.parse_pressure("some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\n"
                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") == 2.5
    assert cpu.parse_pressure("") is None
    assert cpu.parse_steal("cpu  10 0 5 100 1 0 0 42 0 0\ncpu0 1 2 3 4\n") == 42


def test_cgroup_path_v1_and_v2():
    v1 = "12:cpu,cpuacct:/docker/abc\n11:cpuset:/dragnet\n0::/user.slice\n"
    assert cpu.cgroup_path(v1) == "/docker/abc"
    assert cpu.cgroup_path(v1, "cpuset") == "/dragnet"
    assert cpu.cgroup_path("0::/system.slice/x.service\n") == "/system.slice/x.service"


def test_usage_flags_a_run_that_waited_more_than_it_ran():
    a = cpu.Snapshot(0.0, 1.0, None, None, 1.0, 0.5, 0.0, 10.0, 3)
    b = cpu.Snapshot(2.0, 2.5, None, None, 2.0, 2.0, 0.0, 11.0, 3)
    u = cpu.usage(a, b)
    assert u["cpu_s"] == 1.5 and u["source"] == "/proc process tree"
    assert u["wait_s"] == 1.5 and u["run_s"] == 1.0 and u["waited_more_than_ran"]
    assert u["pressure_some_s"] == 1.0


def test_usage_sums_schedstat_per_thread_so_an_exited_one_does_not_subtract():
    # thread 7 ran 3 s before the first snapshot and exited before the second; thread 8 is new
    a = cpu.Snapshot(0.0, 1.0, None, None, 4.0, 0.2, None, None, 2, (), ((6, 1_000_000_000, 100_000_000),
                                                                      (7, 3_000_000_000, 100_000_000)))
    b = cpu.Snapshot(1.0, 2.0, None, None, 1.7, 0.3, None, None, 2, (), ((6, 1_500_000_000, 200_000_000),
                                                                      (8, 200_000_000, 100_000_000)))
    u = cpu.usage(a, b)
    assert u["run_s"] == pytest.approx(0.7) and u["wait_s"] == pytest.approx(0.2)
    # a tid reused in between (its counters went down) counts whole
    c = cpu.Snapshot(2.0, 2.0, None, None, 0.1, 0.0, None, None, 1, (), ((6, 100_000_000, 0),))
    assert cpu.usage(b, c)["run_s"] == pytest.approx(0.1)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_tree_counts_a_child_that_exited():
    # a shell (the root) runs a CPU-burning child to completion, then execs a sleep: the child's CPU is
    # only in the root's cutime by the time of the second snapshot
    burn = f"{sys.executable} -c 'import time; t=time.process_time(); exec(\"while time.process_time()-t<0.4: pass\")'"
    root = subprocess.Popen(["sh", "-c", f"sleep 0.3; {burn}; exec sleep 30"])
    try:
        before = cpu.Snapshot.take(root.pid)      # the burner starts 0.3 s after the shell does
        deadline = time.time() + 30
        after = None
        while time.time() < deadline:
            time.sleep(0.2)
            if Path(f"/proc/{root.pid}/comm").read_text().strip() == "sleep":   # exec'd: the burner is done
                after = cpu.Snapshot.take(root.pid)
                break
        assert after is not None, "the shell never reached its final sleep"
        used = cpu.usage(before, after)
        assert 0.35 <= used["proc_cpu_s"] <= 2.0
        assert used["run_s"] >= 0 and used["pids"] == 1
    finally:
        root.kill()
        root.wait()


def test_thread_usage_counts_new_threads_whole_and_old_ones_from_the_first_reading():
    first = {(10, "5", 10): ("couchjs", 1_000_000_000, 10, 90, 10), (11, "6", 11): ("couchjs", 500_000_000, 0, 50, 0)}
    last = {(10, "5", 10): ("couchjs", 1_300_000_000, 30, 110, 20),    # ran 0.3 s during the build
            (11, "6", 11): ("couchjs", 500_000_000, 0, 50, 0),          # idle
            (12, "9", 12): ("couchjs", 200_000_000, 5, 15, 5),          # started during the build: all counts
            (13, "9", 13): ("python3", 100_000_000, 0, 10, 0)}
    u = cpu.thread_usage(first, last, 2.0, 20, 0.1)
    assert u["cpu_s"] == pytest.approx(0.6) and u["wait_s"] == pytest.approx(25e-9)
    assert u["by_process"] == {"couchjs": pytest.approx(0.5), "python3": pytest.approx(0.1)}
    assert u["user_s"] == pytest.approx(45 / cpu.CLK_TCK) and u["system_s"] == pytest.approx(15 / cpu.CLK_TCK)
    assert u["processes"] == 4 and u["threads"] == 4
    assert u["started"] == 2 and u["started_cpu_s"] == pytest.approx(0.3)


def test_unseen_ticks_come_from_the_reapers_accounting():
    first = {(5, "1"): (100, 0), (6, "1"): (50, 0)}                  # two servers at the first reading
    last = {(5, "1"): (180, 0), (6, "1"): (70, 0), (7, "2"): (30, 0)}  # 6 ended after its last reading; 7 new, ended
    # 6 ran 90 ticks in all, 7 ran 45: the reaper's children's figure rose by both whole
    reapers_first, reapers_last = {(2, "0"): (9, 1000)}, {(2, "0"): (9, 1000 + 90 + 45)}
    # 6 ran 20 unseen after its last reading, 7 15; 5 (alive) none; a server started and ended between two
    # readings (never read) would be in the reaper's rise alone
    assert cpu.unseen_ticks(first, last, {(5, "1")}, reapers_first, reapers_last) == 20 + 15
    reapers_last = {(2, "0"): (9, 1000 + 90 + 45 + 12)}
    assert cpu.unseen_ticks(first, last, {(5, "1")}, reapers_first, reapers_last) == 20 + 15 + 12
    # a live server's reaped child: in the server's children's figure, unseen by its threads
    assert cpu.unseen_ticks({(5, "1"): (100, 0)}, {(5, "1"): (150, 8)}, {(5, "1")}, {}, {}) == 8
    # nothing ended: nothing unseen, and never below zero (a spawner gone at the end)
    assert cpu.unseen_ticks(first, {(5, "1"): (180, 0), (6, "1"): (70, 0)}, {(5, "1"), (6, "1")},
                            reapers_first, reapers_first) == 0
    assert cpu.unseen_ticks(first, last, {(5, "1")}, reapers_first, {}) == 0


# a stand-in for a process under CouchDB: sets its name (what /proc/PID/comm shows), then as erl_child_setup
# starts and reaps its children (the commands after it); as anything else waits for the go file, burns CPU,
# says so and ends (or stays, as CouchDB's helpers do)
_FAKE = """import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)   # PR_SET_NAME
if sys.argv[1] == "erl_child_setup":
    for cmd in sys.argv[2:]:
        subprocess.Popen(cmd.split("|"))
    while True:
        try:
            os.wait()                   # reaped: the child's whole time goes into this one's cutime/cstime
        except ChildProcessError:
            time.sleep(60)
go, seconds, done, stay = sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5] == "stay"
while not os.path.exists(go):
    time.sleep(0.005)
t = time.process_time()
while time.process_time() - t < seconds:
    pass
with open(done, "w") as f:
    f.write(repr(time.process_time()))   # its whole CPU so far, start-up included
if stay:
    time.sleep(60)
"""


def _ticks(pid: int) -> tuple[int, int]:
    _, u, s, cu, cs = cpu.parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    return u + s, cu + cs


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.parametrize("period", [60.0, 0.01], ids=["no-reading-between", "readings-between"])
def test_tracker_counts_query_servers_that_end_between_readings_and_not_couchdbs_helpers(tmp_path, period):
    # beam (the root), its erl_child_setup, two query servers that burn 0.3 s each after the tracker starts
    # and end, and a helper named inet_gethost that burns 0.3 s too but is CouchDB's own and stays. With a
    # 60 s period no reading falls between the tracker's first and last: the servers' CPU is only in
    # erl_child_setup's cutime. With 0.01 s readings see them, and they end after their last one. Waits for
    # conditions, never for time.
    fake, go = tmp_path / "fake.py", tmp_path / "go"
    fake.write_text(_FAKE)
    child = lambda name, done, stay="end": "|".join(  # noqa: E731
        [sys.executable, str(fake), name, str(go), "0.3", str(tmp_path / done), stay])
    root = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); "
                             "time.sleep(60)", sys.executable, str(fake), "erl_child_setup", child("qs", "one"),
                             child("qs", "two"), child("inet_gethost", "helper", "stay")], start_new_session=True)

    def wait_for(ok, what):
        deadline = time.monotonic() + 120
        while not ok():
            assert time.monotonic() < deadline, f"no {what} within 120 s"
            time.sleep(0.01)

    def named(name):
        return [p for p in cpu.tree(root.pid) if (cpu._read(f"/proc/{p}/comm") or "").strip() == name]
    try:
        wait_for(lambda: len(named("erl_child_setup")) == 1 and len(named("qs")) == 2 and named("inet_gethost"),
                 "erl_child_setup with its three children")
        setup, helper = named("erl_child_setup")[0], named("inet_gethost")[0]
        before = _ticks(setup)[1]
        tracker = cpu.QueryServerTracker(root.pid, period=period).start()
        go.touch()
        wait_for(lambda: all((tmp_path / m).exists() for m in ("one", "two", "helper")), "burners' end")
        wait_for(lambda: cpu._children(setup, "/proc") == [helper], "the servers reaped")
        used = tracker.stop()
        reaped = (_ticks(setup)[1] - before) / cpu.CLK_TCK     # the kernel's figure for the two servers, whole
        own = [float((tmp_path / m).read_text()) for m in ("one", "two")]   # what each said it used, whole
        tick = 1 / cpu.CLK_TCK
        # the helper burnt its 0.3 s; none of it is counted
        assert _ticks(helper)[0] / cpu.CLK_TCK >= 0.3 - tick
        assert "inet_gethost" not in used["by_process"]
        # both servers' 0.3 s since go, and no more than their whole lives (the kernel's and their own word,
        # plus a tick each for rounding and their exit after they wrote it): the helper's 0.3 s would exceed it
        assert 0.6 - 2 * tick <= used["cpu_s"] <= min(reaped, sum(own) + 0.1) + 2 * tick, (used, reaped, own)
        if period == 60.0:
            assert used["samples"] == 1 and used["unseen_cpu_s"] >= 0.6 - 2 * tick
    finally:
        os.killpg(root.pid, 9)
        root.wait()
