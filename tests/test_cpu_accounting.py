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


_NAMED = """import ctypes, subprocess, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)   # PR_SET_NAME: what /proc/PID/comm shows
for cmd in sys.argv[2:]:
    subprocess.Popen(cmd, shell=True)
time.sleep(60)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_tracker_counts_query_servers_that_start_and_end_and_not_couchdbs_helpers(tmp_path):
    # a stand-in for beam (the root) with an erl_child_setup child whose children are two CPU burners that
    # start after the tracker and end before it stops, and a helper named inet_gethost that burns too but is
    # CouchDB's own. Waits for what it needs, not fixed sleeps: on a machine loaded 30 times over a 0.3 s
    # burner takes seconds.
    named = tmp_path / "named.py"
    named.write_text(_NAMED)
    burn = lambda s, after=0: (f"sleep {after}; {sys.executable} -c 'import time; t=time.process_time(); "  # noqa: E731
                               f"exec(\"while time.process_time()-t<{s}: pass\")'")
    helper = f"exec {sys.executable} {named} inet_gethost \"{burn(0.3)}\""
    setup = [sys.executable, str(named), "erl_child_setup", f"{burn(0.3, 0.3)}; touch {tmp_path / 'one'}",
             f"{burn(0.3, 0.8)}; touch {tmp_path / 'two'}", helper]
    root = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); "
                             "time.sleep(60)", *setup], start_new_session=True)

    def wait_for(ok, what):
        deadline = time.monotonic() + 50
        while not ok():
            assert time.monotonic() < deadline, f"no {what} within 50 s"
            time.sleep(0.01)

    def comms():
        return {(cpu._read(f"/proc/{p}/comm") or "").strip() for p in cpu.tree(root.pid)}
    try:
        wait_for(lambda: "erl_child_setup" in comms(), "erl_child_setup")
        tracker = cpu.QueryServerTracker(root.pid, period=0.05).start()
        wait_for(lambda: all((tmp_path / m).exists() for m in ("one", "two")), "burners' end")
        used = tracker.stop()
        # both burners whole (0.3 s each, and their shells' and interpreters' start); the helper never
        assert 0.55 <= used["cpu_s"] <= 0.9, used
        assert used["samples"] >= 10 and "inet_gethost" not in used["by_process"]
    finally:
        os.killpg(root.pid, 9)
        root.wait()
