"""The compiled load generator (dragnet-loadgen): its lines read into the generator's records, the driver
chosen, and (live) the same load through Go and through aiohttp, recorded, checked and purged alike."""

import subprocess
import time

import pytest

from dragnet.errors import UsageError
from dragnet.load import compiled as C
from dragnet.load import spec as S
from dragnet.load.generator import Load, window_figures


def _r(kind="reads", status="200", stage="", error="", doc_id="", rev="", due="10.0", sent="10.1", end="10.3"):
    return "\t".join(["R", kind, due, sent, end, status, stage, error, doc_id, rev]) + "\n"


def test_a_request_line_is_a_request_with_its_times_and_status():
    tag, req, doc_id, rev = C.parse_line(_r(kind="writes", status="201", doc_id="dragnet-load-a-0000001", rev="1-x"))
    assert tag == "R" and (req.kind, req.due, req.sent, req.end, req.status) == ("writes", 10.0, 10.1, 10.3, 201)
    assert req.reason is None and (doc_id, rev) == ("dragnet-load-a-0000001", "1-x")


@pytest.mark.parametrize("status,stage,error,reason", [
    ("409", "", "conflict", S.CONFLICT),                 # conflicts apart, as the aiohttp generator counts them
    ("500", "", "unknown_error", "500 unknown_error"),
    ("404", "read", "not_found", "read: 404 not_found"),  # an update whose read failed
    ("503", "", "", "503"),
    ("0", "", "refused", "refused"),                      # no answer: the connection's reason
    ("0", "", "cancelled at stop", "cancelled at stop"),
    ("0", "", "nothing to update", "nothing to update"),
])
def test_failures_get_the_reasons_of_the_aiohttp_generator(status, stage, error, reason):
    _, req, _, _ = C.parse_line(_r(status=status, stage=stage, error=error))
    assert req.reason == reason and req.status == (int(status) or None)


def test_not_sent_ready_and_notes():
    assert C.parse_line("N\tview-waits\t12.5\n") == ("N", "view-waits", 12.5)
    assert C.parse_line("ready 3.25\n") == ("ready", "3.25")
    assert C.parse_line("note the load stopped by itself after 60 s\n")[1].startswith("the load stopped")


def test_parsed_lines_make_the_same_window_figures():
    reqs = [C.parse_line(_r(due=f"{10 + i / 10:.1f}", sent=f"{10 + i / 10:.1f}", end=f"{10.05 + i / 10:.2f}",
                            status="404" if i == 3 else "200", error="not_found"))[1] for i in range(10)]
    w = window_figures(reqs, [("reads", 10.95)], "reads", 10.0, 10.0, 11.0)
    assert (w["sent"], w["ok"], w["not_sent"], w["errors"]) == (10, 9, 1, {"404 not_found": 1})
    assert w["latency"]["p50_ms"] == pytest.approx(50, abs=1)


def test_the_driver_is_go_where_built_aiohttp_otherwise_and_a_bad_name_is_refused(monkeypatch, tmp_path):
    with pytest.raises(UsageError, match="must be one of auto, go, aiohttp"):
        C.resolve("curl")
    monkeypatch.setattr(C, "LOADGEN", tmp_path / "dragnet-loadgen")
    assert C.resolve("auto") == "aiohttp"
    with pytest.raises(UsageError, match="not built"):
        C.resolve("go")
    (tmp_path / "dragnet-loadgen").write_text("#!/bin/sh\n")
    (tmp_path / "dragnet-loadgen").chmod(0o755)
    assert C.resolve("auto") == "go" and C.resolve("aiohttp") == "aiohttp"


def test_a_loadgen_without_a_load_on_stdin_exits_with_one_line():
    if C.resolve() != "go":
        pytest.skip("dragnet-loadgen is not built (make servers)")
    p = subprocess.run([str(C.LOADGEN)], input="not json\n", capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stderr.startswith("dragnet-loadgen: bad load:") and p.stdout == ""


@pytest.mark.live
@pytest.mark.parametrize("driver", ["go", "aiohttp"])
def test_the_same_load_through_either_generator_is_recorded_checked_and_purged(live_db, driver):
    if driver == "go" and C.resolve() != "go":
        pytest.skip("dragnet-loadgen is not built (make servers)")
    couch, live_db = live_db
    couch.request("PUT", f"/{live_db}", ok=(201, 202))
    couch.post(f"/{live_db}/_bulk_docs", {"docs": [{"_id": f"d{i:03d}", "n": i, "s": "é"} for i in range(200)]})
    couch.put(f"/{live_db}/_design/x", {"views": {"v": {"map": "function(d){emit(d.n, 1)}"}}})
    spec = S.parse("writes=40/s,updates=10/s,reads=80/s,view-reads=5/s")
    load = C.new_load(couch, live_db, spec, driver=driver, max_seconds=60, before_s=0)
    assert type(load) is (C.GoLoad if driver == "go" else Load)
    load.prepare()
    load.start()
    time.sleep(1)
    load.begin_build(f"/{live_db}/_design/x/_view/v?limit=1")
    time.sleep(3)
    load.build_ended()
    rec = load.stop()
    assert rec["driver"] == driver and rec["cpu_s"] > 0 and rec["cpu_share_of_core"] < 1
    k = rec["kinds"]
    assert k["reads"]["before"]["ok"] > 0 and k["reads"]["build"]["ok"] > 0 and k["writes"]["build"]["ok"] > 0
    assert k["view-reads"]["build"]["ok"] > 0 and "before" not in k["view-reads"]
    assert k["updates"]["build"]["ok"] > 0
    check = rec["writes_check"]
    # every acknowledged write and update found by id and _rev; updates bumped their documents' revs
    assert check["acknowledged"] >= k["writes"]["build"]["ok"] and check["lost"] == 0
    assert any(rev.startswith(("2-", "3-", "4-")) for rev in load.st.acked.values())
    purge = load.purge()
    assert purge["left"] == 0 and purge["purged"] == purge["written"] > 0
    assert couch.get(f"/{live_db}")["doc_count"] == 201       # the 200 and the design document


def _ticked(couch, db, rate, tick_s):
    load = C.GoLoad(couch, db, S.parse(f"reads={rate:g}/s"), max_seconds=60, before_s=0)
    load.tick_s = tick_s
    load.prepare()
    load.start()
    load.begin_build(None)
    time.sleep(2)
    load.build_ended()
    rec = load.stop()
    assert rec["event_loop"] == f"go, sends on a {tick_s * 1000:g} ms tick"
    reqs = sorted(load.st.requests, key=lambda r: r.due)
    assert len(reqs) > 300 and all(r.status == 200 for r in reqs)
    # due times stay on the open-loop schedule (i / rate), whatever the tick did to the sending
    steps = [b.due - a.due for a, b in zip(reqs, reqs[1:])]
    assert max(abs(s - 1 / rate) for s in steps) < 1e-5
    late = sorted(r.sent - r.due for r in reqs)
    assert late[0] >= 0
    assert rec["kinds"]["reads"]["build"]["late"]["p50_ms"] == pytest.approx(1000 * late[len(late) // 2], abs=2)
    # a burst: requests sent on one wake-up, closer together than half the schedule's step
    sent = sorted(r.sent for r in reqs)
    bursts = 1 + sum(b - a > 0.5 / rate for a, b in zip(sent, sent[1:]))
    return bursts / len(reqs), late[len(late) // 2]


@pytest.mark.live
def test_the_tick_sends_late_but_keeps_each_due_time_so_the_lateness_is_recorded(live_db):
    if C.resolve() != "go":
        pytest.skip("dragnet-loadgen is not built (make servers)")
    couch, live_db = live_db
    couch.request("PUT", f"/{live_db}", ok=(201, 202))
    couch.post(f"/{live_db}/_bulk_docs", {"docs": [{"_id": f"d{i:03d}"} for i in range(20)]})
    rate, tick = 200.0, 0.025
    # each run's record keeps every request's due time on the schedule and its lateness as sent (_ticked); how
    # much the tick bunches and delays them is a measurement: benchmarks/speed_targets/load_tick.py
    _ticked(couch, live_db, rate, 0.0)
    _ticked(couch, live_db, rate, tick)
