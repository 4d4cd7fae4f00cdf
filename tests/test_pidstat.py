"""pidstat output parsing (recorded `pidstat -hrudvlI` of real builds) and the runner on a live process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
import subprocess
import time

import pytest

from dragnet.measure import pidstat as pidstat
from dragnet.report.render import build_text as build_text

RECORDED = ["javascript", "javascript_quickjs", "python", "erlang", "erlang_baseline", "js_syntax_error"]


def data_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#") and not ln.startswith("Linux")]


@pytest.mark.parametrize("name", RECORDED)
def test_every_data_line_becomes_a_sample(fixtures_dir, name):
    text = (fixtures_dir / name / "pidstat.txt").read_text()
    parsed = pidstat.parse(text)
    lines = data_lines(text)
    assert parsed.skipped == []
    assert len(parsed.samples) == len(lines)
    headers = sum(1 for ln in text.splitlines() if ln.startswith("# Time"))
    assert len({s["interval"] for s in parsed.samples}) <= headers
    for s, line in zip(parsed.samples, lines):
        fields = line.split()
        assert s["pid"] == int(fields[2])
        assert s["cpu_pct"] == float(fields[7])
        assert s["rss_kb"] == int(fields[12])
        assert s["threads"] == int(fields[18])
        # -l: the whole command line, spaces and all, is the last column
        assert line.rstrip().endswith(s["command"])
        assert s["command"].split()[0] == fields[20]


def test_header_and_times(fixtures_dir):
    parsed = pidstat.parse((fixtures_dir / "javascript" / "pidstat.txt").read_text())
    h = parsed.header
    assert (h.kernel, h.hostname, h.date, h.arch, h.cpus) == ("6.18.44-fc-v669", "vm", "11/21/26", "x86_64", 2)
    first = parsed.samples[0]
    assert first["time"] == "10:34:20"
    # the recording ran in UTC: 2026-11-21 10:34:20 UTC, just after pidstat started (meta.json)
    assert first["t"] == 1795257260.0
    assert parsed.samples[-1]["t"] - first["t"] == 55


def test_long_command_lines_with_spaces(fixtures_dir):
    parsed = pidstat.parse((fixtures_dir / "javascript" / "pidstat.txt").read_text())
    beam = next(s for s in parsed.samples if s["family"] == "beam")
    assert beam["command"].startswith("/opt/couchdb/bin/../erts-13.1.5/bin/beam.smp -SDio 16")
    assert beam["command"].endswith("-config /opt/couchdb/bin/../releases/sys.config --")
    families = {s["family"] for s in parsed.samples}
    assert families == {"beam", "couchjs", "pidstat", "python"}


def rederive_family(text: str, needle: str, exclude: set[int]) -> dict:
    """Per interval (header block) sums of %CPU and RSS over lines whose command contains needle."""
    blocks: list[dict] = []
    for line in text.splitlines():
        if line.startswith("# Time"):
            blocks.append({"cpu": 0.0, "rss": 0, "n": 0})
            continue
        if not line.strip() or line.startswith("Linux") or not blocks:
            continue
        f = line.split()
        if f[20] == "pidstat" or f[20].endswith("run_variant.py") or (len(f) > 21 and f[21].endswith("run_variant.py")):
            continue          # pidstat's own line lists the pattern; the harness names the variant
        if needle in " ".join(f[20:]) and int(f[2]) not in exclude:
            blocks[-1]["cpu"] += float(f[7])
            blocks[-1]["rss"] += int(f[12])
            blocks[-1]["n"] += 1
    used = [b for b in blocks if b["n"]]
    return {"cpu_avg": sum(b["cpu"] for b in used) / len(used), "cpu_peak": max(b["cpu"] for b in used),
            "rss_peak": max(b["rss"] for b in used), "intervals": len(used)}


@pytest.mark.parametrize("name,family,needle,processes", [
    ("javascript", "couchjs", "couchjs", 9),
    ("javascript_quickjs", "quickjs", "couchjs_mainjs", 9),
    ("python", "couchpy", "couchpy", 9),
    ("javascript", "beam", "beam.smp", 1),
    ("erlang_baseline", "beam", "beam.smp", 1),     # has two intervals stamped with the same second
])
def test_family_summary_matches_rederivation(fixtures_dir, name, family, needle, processes):
    text = (fixtures_dir / name / "pidstat.txt").read_text()
    summary = pidstat.summarize(pidstat.parse(text).samples)
    want = rederive_family(text, needle, set())
    got = summary[family]
    assert got["processes"] == processes
    assert got["intervals"] == want["intervals"]
    assert got["cpu_pct"]["avg"] == pytest.approx(want["cpu_avg"])
    assert got["cpu_pct"]["peak"] == pytest.approx(want["cpu_peak"])
    assert got["rss_kb"]["peak"] == want["rss_peak"]


def test_pidstat_itself_and_excluded_pids_are_left_out(fixtures_dir):
    text = (fixtures_dir / "javascript" / "pidstat.txt").read_text()
    samples = pidstat.parse(text).samples
    summary = pidstat.summarize(samples)
    assert "pidstat" not in summary and "python" in summary      # the recording harness
    summary = pidstat.summarize(samples, exclude_pids={16983})
    assert set(summary) == {"beam", "couchjs"}
    assert build_text.format_pidstat_summary(summary)[0].startswith("beam")


def test_am_pm_times_average_lines_and_garbage():
    text = """Linux 6.1.0 (box) \t2025-03-01 \t_x86_64_\t(4 CPU)

# Time           UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM   kB_rd/s   kB_wr/s kB_ccwr/s iodelay threads   Command
11:59:59 PM     1000      4242   10.00    2.00    0.00    0.00    3.00     1      5.00      0.00    1000     500   0.01      0.00      0.00      0.00       0       2  couchjs ./main.js --flag "x y"
this line is not pidstat's
# Time           UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM   kB_rd/s   kB_wr/s kB_ccwr/s iodelay threads   Command
12:00:00 AM     1000      4242   20.00    2.00    0.00    0.00    6.00     1      5.00      0.00    1000     700   0.01      0.00      0.00      0.00       0       2  couchjs ./main.js --flag "x y"
Average:        1000      4242   15.00    2.00    0.00    0.00    4.50     -      5.00      0.00    1000     600   0.01      0.00      0.00      0.00       0       2  couchjs
"""
    parsed = pidstat.parse(text)
    assert parsed.header.cpus == 4 and parsed.header.date == "2025-03-01"
    assert [s["time"] for s in parsed.samples] == ["11:59:59 PM", "12:00:00 AM"]
    # rolls over midnight: one second apart
    assert parsed.samples[1]["t"] - parsed.samples[0]["t"] == 1
    assert parsed.samples[0]["command"] == 'couchjs ./main.js --flag "x y"'
    assert "fd_nr" not in parsed.samples[0]            # no fd-nr column without root: fine
    assert len(parsed.skipped) == 2                    # the stray line and the Average line, kept visibly
    s = pidstat.summarize(parsed.samples)["couchjs"]
    assert s["cpu_pct"] == {"avg": 4.5, "peak": 6.0} and s["rss_kb"]["peak"] == 700


def test_empty_output():
    parsed = pidstat.parse("")
    assert parsed.samples == [] and pidstat.summarize([]) == {}


@pytest.mark.skipif(shutil.which("pidstat") is None, reason="pidstat (sysstat) not installed")
def _cpu_s(pid: int) -> float:
    """User + system time of `pid` from /proc (the kernel's accounting), in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_runner_records_a_busy_process(tmp_path):
    # a copy of `yes` under a name of our own, so the pattern matches only it
    probe = tmp_path / "dnprobe"
    shutil.copy(shutil.which("yes"), probe)
    busy = subprocess.Popen([str(probe)], stdout=subprocess.DEVNULL)
    try:
        runner = pidstat.PidstatRunner(pattern="dnprobe", interval=1).start()
        t0, c0 = time.time(), _cpu_s(busy.pid)
        time.sleep(3.5)
        text = runner.stop()
        kernel_pct = (_cpu_s(busy.pid) - c0) / (time.time() - t0) / (os.cpu_count() or 1) * 100
    finally:
        busy.kill()
        busy.wait()
    parsed = pidstat.parse(text)
    mine = [s for s in parsed.samples if s["pid"] == busy.pid]
    assert len(mine) >= 2, text
    assert all(s["command"].startswith(str(probe)) for s in mine)
    summary = pidstat.summarize(parsed.samples)
    # `yes` is always runnable: pidstat's peak (%CPU / cores with -I) is at least about the kernel's own average
    # for it over the window, however loaded the machine is
    assert kernel_pct > 0
    assert summary["dnprobe"]["cpu_pct"]["peak"] >= 0.5 * kernel_pct, (summary["dnprobe"], kernel_pct)
    assert summary["dnprobe"]["rss_kb"]["peak"] > 0
    # started with TZ=UTC and ISO dates: sample times are real unix times
    assert abs(mine[-1]["t"] - time.time()) < 10
    assert runner.proc is None                              # stopped and reaped


@pytest.mark.parametrize("command,family", [
    ("/opt/couchdb/bin/../erts-13.1.5/bin/beam.smp -SDio 16 -- -root /opt/couchdb", "beam"),
    ("./bin/couchjs ./share/server/main.js", "couchjs"),
    ("/opt/couchdb/lib/couch_quickjs-3.5.0/priv/couchjs_mainjs", "quickjs"),
    ("/opt/couchpy/bin/python3 /opt/couchpy/bin/couchpy ", "couchpy"),
    ("/usr/bin/pypy3 -m couchdb.view", "couchpy-pypy"),
    ("/work/main/query_servers/chakra/build/dragnet-chakra", "chakra"),
    ("/work/main/.venv/bin/python /work/main/query_servers/python/dragnet_qs.py", "dragnet_qs"),
    ("/usr/bin/pypy3 /work/main/query_servers/python/dragnet_qs.py", "dragnet_qs-pypy"),
    ("/work/main/.venv/bin/python3 /work/main/.venv/bin/dragnet addview views/income/map.js", "dragnet"),
    ("/work/main/.venv/bin/python -m pytest -q", "dragnet"),
    # arguments never decide: a harness naming a variant stays python
    ("/usr/bin/python3 /srv/bench/run_variant.py /srv/bench/out/javascript_quickjs javascript_quickjs", "python"),
    ("pidstat -hrudvlI -C beam|couchjs|python 1", "pidstat"),
    ("/tmp/pytest-of-root/pytest-1/x/dnprobe", "dnprobe"),
])
def test_command_families(command, family):
    assert pidstat.family(command) == family


def test_process_name_reads_comm(tmp_path):
    import os

    assert pidstat.process_name(os.getpid()) == Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "comm").write_text("docker-proxy\n")
    assert pidstat.process_name(42, proc=str(tmp_path)) == "docker-proxy"
    assert pidstat.process_name(43, proc=str(tmp_path)) is None


@pytest.mark.skipif(not pidstat.PidstatRunner.available(), reason="pidstat not installed (Debian sysstat)")
def test_a_stop_right_after_the_start_still_gets_one_report():
    # a build shorter than pidstat's interval must not leave the figures empty
    runner = pidstat.PidstatRunner("python", 1).start()
    text = runner.stop()
    samples = pidstat.parse(text).samples
    assert samples, text
    assert runner.stopped_at - runner.started_at >= 1.0


def test_a_password_in_another_process_command_line_never_reaches_the_samples():
    # pidstat -l shows every process's whole command line; another tool run with a URL holding a password
    text = ("Linux 6.1.0 (host) \t11/23/26 \t_x86_64_\t(2 CPU)\n\n"
            "#      Time   UID       PID    %usr %system  %guest   %wait    %CPU   CPU  minflt/s  majflt/s     VSZ     RSS   %MEM  Command\n"
            " 1763900000     0      4242    1.00    0.00    0.00    0.00    1.00     0      0.00      0.00  10000   5000   0.02  "
            "python3 tool.py --url http://admin:s3cret@127.0.0.1:5984/db --to https://u:p%40ss@example.org\n")
    parsed = pidstat.parse(text)
    assert len(parsed.samples) == 1
    cmd = parsed.samples[0]["command"]
    assert "s3cret" not in cmd and "p%40ss" not in cmd
    assert "http://admin:***@127.0.0.1:5984/db" in cmd and "https://u:***@example.org" in cmd
