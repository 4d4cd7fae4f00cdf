"""The JVM beside beam and the query servers: pidstat's samples of a Nouveau build per family, the Nouveau
container's control group, and both in a build's text; live, a build on the live CouchDB's Nouveau server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.index import search_build as nv
from dragnet.measure import cgroup
from dragnet.measure import pidstat
from dragnet.report.search_text import process_lines

REPO = Path(__file__).resolve().parents[1]
INDEX = REPO / "docs" / "studies" / "nouveau" / "declarations.js"

# pidstat -hrudvlI as the runner starts it (LC_ALL=C, S_TIME_FORMAT=ISO): beam, couchjs, the JVM, another java
PIDSTAT = """Linux 6.1.0-28-amd64 (host) 2026-11-25 _x86_64_ (2 CPU)

# Time        UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM   kB_rd/s   kB_wr/s kB_ccwr/s iodelay threads   fd-nr  Command
 1764090001     0       100   20.00    2.00    0.00    0.00   11.00     0    100.00      0.00 4000000  300000   1.20      0.00    700.00      0.00       0      26      -  /opt/couchdb/bin/beam.smp -- -root /opt/couchdb
 1764090001     0       101    5.00    1.00    0.00    0.00    3.00     1     10.00      0.00   80000   30000   0.10      0.00      0.00      0.00       0       3      -  /opt/couchdb/bin/couchjs /opt/couchdb/share/server/main.js
 1764090001     0       200   10.00    2.00    0.00    0.00    6.00     1     50.00      0.00 9000000  240000   1.00      0.00     20.00      0.00       0      48      -  /usr/bin/java -Xmx1g -jar nouveau-3.5.0.jar server nouveau.yaml
 1764090001     0       300   50.00    0.00    0.00    0.00   25.00     1     50.00      0.00 9000000  900000   3.00      0.00      0.00      0.00       0      48      -  /usr/bin/java -jar someone-elses.jar

# Time        UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM   kB_rd/s   kB_wr/s kB_ccwr/s iodelay threads   fd-nr  Command
 1764090002     0       100   30.00    2.00    0.00    0.00   16.00     0    100.00      0.00 4000000  310000   1.20      0.00    800.00      0.00       0      26      -  /opt/couchdb/bin/beam.smp -- -root /opt/couchdb
 1764090002     0       200   14.00    2.00    0.00    0.00    8.00     1     50.00      0.00 9000000  250000   1.00      0.00     30.00      0.00       0      48      -  /usr/bin/java -Xmx1g -jar nouveau-3.5.0.jar server nouveau.yaml
"""


def test_process_summary_puts_the_jvm_beside_beam_and_the_query_servers():
    samples = pidstat.parse(PIDSTAT).samples
    out = nv.process_summary(samples, couchdb_pids={100, 101}, jvm_pids={200})
    assert set(out) == {"beam", "couchjs", nv.JVM_FAMILY}      # someone else's java (300) is not ours
    jvm = out[nv.JVM_FAMILY]
    assert jvm["pids"] == [200] and jvm["cpu_pct"]["avg"] == pytest.approx(7.0) and jvm["rss_kb"]["peak"] == 250000
    assert jvm["kb_wr_s"]["peak"] == 30.0
    assert out["beam"]["rss_kb"]["peak"] == 310000
    # the watcher's own pid left out
    assert nv.JVM_FAMILY not in nv.process_summary(samples, {100}, {200}, exclude={200})


def test_process_lines_show_pidstat_and_the_containers_group():
    r = {"pidstat": nv.process_summary(pidstat.parse(PIDSTAT).samples, {100, 101}, {200}),
         "jvm_cgroup": {"group": "/docker/abc", "cpu_s": 4.5, "read_bytes": 0, "write_bytes": 3_000_000,
                        "memory_peak_bytes": 400_000_000}}
    lines = process_lines(r)
    assert lines[0].startswith("per process (pidstat")
    assert any(line.strip().startswith("jvm ") and "peak   244.1 MB" in line for line in lines)
    assert "Nouveau container (/docker/abc): CPU 4.5 s, read 0.0 MB, written 3.0 MB, peak memory 400.0 MB" in lines[-1]
    assert process_lines({"pidstat": None, "pidstat_note": "pidstat not found (install sysstat)"}) == [
        "per process: pidstat not found (install sysstat)"]


def test_cgroup_parsers():
    assert cgroup.parse_blkio("8:0 Read 4096\n8:0 Write 8192\n8:0 Sync 0\n8:16 Read 1\nTotal 12289\n") == (4097, 8192)
    assert cgroup.parse_io_stat("8:0 rbytes=4096 wbytes=100 rios=1 wios=2\n8:16 rbytes=1 wbytes=0\n") == (4097, 100)


def _fake(tmp_path: Path, members: str) -> tuple[Path, Path]:
    """A /proc with one container process (pid 7, its child 8) in a v1 group, and the group's files."""
    proc, sys_fs = tmp_path / "proc", tmp_path / "cg"
    for pid, ppid in ((7, 1), (8, 7)):
        d = proc / str(pid)
        d.mkdir(parents=True)
        (d / "stat").write_text(f"{pid} (java) S {ppid} 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0\n")
        (d / "cgroup").write_text("5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n3:blkio:/docker/abc\n")
    for ctl, files in (("memory", {"cgroup.procs": members, "memory.max_usage_in_bytes": "400000000"}),
                       ("cpuacct", {"cpuacct.usage": "4500000000"}),
                       ("blkio", {"blkio.throttle.io_service_bytes": "8:0 Read 10\n8:0 Write 20\n"})):
        d = sys_fs / ctl / "docker" / "abc"
        d.mkdir(parents=True)
        for name, text in files.items():
            (d / name).write_text(text)
    return proc, sys_fs


def test_cgroup_take_reads_a_containers_group_and_usage_diffs_it(tmp_path):
    proc, sys_fs = _fake(tmp_path, "7\n8\n")
    a = cgroup.take(7, str(proc), str(sys_fs))
    assert a["group"] == "/docker/abc" and a["cpu_s"] == 4.5 and a["memory_peak_bytes"] == 400_000_000
    (sys_fs / "cpuacct" / "docker" / "abc" / "cpuacct.usage").write_text("6000000000")
    (sys_fs / "blkio" / "docker" / "abc" / "blkio.throttle.io_service_bytes").write_text("8:0 Read 10\n8:0 Write 70\n")
    u = cgroup.usage(a, cgroup.take(7, str(proc), str(sys_fs)))
    assert u["cpu_s"] == pytest.approx(1.5) and u["write_bytes"] == 50 and u["read_bytes"] == 0
    assert cgroup.usage(a, None) is None


def test_cgroup_take_refuses_a_group_holding_other_processes(tmp_path):
    proc, sys_fs = _fake(tmp_path, "7\n8\n99\n")
    assert cgroup.take(7, str(proc), str(sys_fs)) is None


@pytest.mark.live
def test_live_build_records_the_jvm_in_pidstat(live_url, tmp_path):
    from dragnet.cli import main
    from dragnet.couchdb.client import connect
    from tests.conftest import generated_db

    if connect(live_url).get("/_node/_local/_config/nouveau").get("enable") != "true":
        pytest.skip("the live CouchDB has no Nouveau server (.ci/live-couchdb starts one from ../shared/nouveau)")
    if not pidstat.PidstatRunner.available():
        pytest.skip("no pidstat (sysstat)")
    with generated_db(live_url, "nvps", 150, seed=4, q=1) as (_, db, _docs):
        r = CliRunner().invoke(main, ["addview", "--benchmark", "--nouveau", str(INDEX), "--url", live_url,
                                      "--db", db, "--interval", "0.5", "--results", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.output)
    ps = res["pidstat"]
    assert {"beam", nv.JVM_FAMILY} <= set(ps) and ps[nv.JVM_FAMILY]["pids"] == [res["nouveau"]["jvm"]["pid"]]
    assert ps[nv.JVM_FAMILY]["rss_kb"]["peak"] > 50_000 and os.getpid() not in ps["beam"]["pids"]
