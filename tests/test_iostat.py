"""iostat parsing from a real `iostat -dxyt 1 8` recording on this machine, during which a loop device
was set up, read 4000 x 4 KiB with O_DIRECT, written 200 x 64 KiB, and detached (loop0 appears in the
4th interval)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dragnet.couchdb import storage as storage
from dragnet.measure import iostat as iostat
from dragnet.report.render import build_text as build_text

HERE = Path(__file__).resolve().parent
RECORDING = HERE / "fixtures" / "iostat" / "loop_appears.txt"


def data_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines()
            if ln.strip() and not ln.startswith(("Linux", "Device", "2026-"))]


def test_every_device_line_becomes_a_sample():
    text = RECORDING.read_text()
    parsed = iostat.parse(text)
    assert parsed.skipped == []
    assert len(parsed.samples) == len(data_lines(text)) == 13
    assert parsed.header.startswith("Linux 6.18.44")
    for s, line in zip(parsed.samples, data_lines(text)):
        f = line.split()
        assert s["device"] == f[0]
        assert (s["r_s"], s["rkb_s"], s["w_s"], s["wkb_s"]) == tuple(float(x) for x in (f[1], f[2], f[7], f[8]))
        assert (s["r_await"], s["w_await"]) == (float(f[5]), float(f[11]))
        assert (s["aqu_sz"], s["util_pct"]) == (float(f[-2]), float(f[-1]))


def test_device_appearing_mid_run():
    parsed = iostat.parse(RECORDING.read_text())
    intervals = {d: [s["interval"] for s in parsed.samples if s["device"] == d] for d in ("vda", "loop0")}
    assert intervals["vda"] == list(range(8))
    assert intervals["loop0"] == [3, 4, 5, 6, 7]
    first = next(s for s in parsed.samples if s["device"] == "loop0")
    # what the recording did to the loop device: 4000 reads of 4 KiB, 200 writes of 64 KiB
    assert (first["r_s"], first["rkb_s"], first["w_s"], first["wkb_s"]) == (4000.0, 16000.0, 200.0, 12800.0)
    # timestamps from the -t lines (ISO, UTC), one second apart
    ts = [s["t"] for s in parsed.samples if s["device"] == "vda"]
    assert ts[0] == 1795423897.0 and [b - a for a, b in zip(ts, ts[1:])] == [1.0] * 7


def test_summary_per_device_reproduces_from_samples():
    parsed = iostat.parse(RECORDING.read_text())
    summary = iostat.summarize(parsed.samples, {"loop0"})
    assert list(summary) == ["loop0"]
    loop = summary["loop0"]
    assert loop["intervals"] == 5
    assert loop["r_s"] == {"avg": 800.0, "peak": 4000.0}
    assert loop["read_kb"] == 16000.0 and loop["written_kb"] == 12800.0
    vda = iostat.summarize(parsed.samples)["vda"]
    assert vda["rkb_s"]["peak"] == 61956.0
    assert vda["read_kb"] == pytest.approx(sum(s["rkb_s"] for s in parsed.samples if s["device"] == "vda"))
    # a time window keeps only the intervals inside it
    t0 = parsed.samples[0]["t"]
    assert iostat.summarize(parsed.samples, {"vda"}, t_from=t0 + 1, t_to=t0 + 2)["vda"]["intervals"] == 2
    assert any("loop0" in ln for ln in build_text.format_iostat_summary(summary))


def test_garbage_lines_are_kept_not_lost():
    text = RECORDING.read_text().replace("vda              0.00      0.00", "vda  oops", 1)
    parsed = iostat.parse(text)
    assert len(parsed.skipped) == 1 and "oops" in parsed.skipped[0]
    assert len(parsed.samples) == 12


def test_device_of_the_worktree_is_a_whole_disk():
    dev = storage.device_of(HERE)
    st = os.stat(HERE)
    assert dev.kind in ("disk", "loop")
    assert Path(f"/sys/dev/block/{dev.majmin}").exists()
    assert os.major(st.st_dev) == dev.major


def test_device_of_tmpfs_is_refused_with_the_reason():
    if not Path("/dev/shm").is_dir() or os.major(os.stat("/dev/shm").st_dev) != 0:
        pytest.skip("no tmpfs at /dev/shm")
    with pytest.raises(storage.NoBlockDevice, match="tmpfs or overlay"):
        storage.device_of("/dev/shm")


@pytest.mark.skipif(not iostat.IostatRunner.available(), reason="iostat (sysstat) not installed")
def test_runner_records_parseable_intervals():
    import time
    r = iostat.IostatRunner(interval=1).start()
    time.sleep(2.5)
    text = r.stop()
    parsed = iostat.parse(text)
    assert parsed.skipped == []
    assert {s["interval"] for s in parsed.samples} >= {0, 1}
    assert all(s["t"] is not None for s in parsed.samples)
