"""qsbench's two map loops, the compiled dragnet-qsdriver and the Python fallback, against real processes:
the same answers byte for byte, the same latency bookkeeping, and every failure raising what the Python loop
(QueryServerProcess.prompt_raw) raises for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dragnet.errors import UsageError
from dragnet.qsbench import driver
from dragnet.qsbench import run as qsbench
from dragnet.servers.protocol import QueryServerDied, QueryServerError, QueryServerProcess, QueryServerTimeout

TESTSERVER = str(Path(__file__).with_name("qs_testserver.py"))
DRIVERS = ("c", "python")


@pytest.fixture(scope="module", autouse=True)
def built():
    if driver.resolve("auto") != "c":
        pytest.fail(f"{driver.QSDRIVER} is not built (make servers builds it)")


def _started(*argv: str, timeout: float = 5.0) -> QueryServerProcess:
    qs = QueryServerProcess([sys.executable, TESTSERVER, *argv], timeout=timeout, name="t")
    assert qs.prompt_raw(qsbench.RESET_LINE) == b"true"
    return qs


def _lines(n: int, pad: int = 0) -> list[bytes]:
    return [json.dumps(["map_doc", {"_id": f"d{i}", "pad": "x" * pad}]).encode() + b"\n" for i in range(n)]


@pytest.mark.parametrize("loop", DRIVERS)
def test_answers_latencies_and_logs(loop):
    qs = _started("log", "2")
    try:
        got = driver.map_loop(qs, _lines(50), loop)
        # the process lives on after the loop, on the same pipes
        assert qs.prompt(["reset", {}]) is True
    finally:
        qs.close()
    assert got.driver == loop
    assert got.answers == [json.dumps([[[f"d{i}", 1]]]).encode() for i in range(50)]
    assert len(got.latencies_ns) == 50 and min(got.latencies_ns) > 0 and sum(got.latencies_ns) == got.map_ns
    assert qs.log_count == 100 and 0 < got.driver_cpu_s


def test_both_loops_give_a_real_server_the_same_rows(docs):
    specs, _ = qsbench.available_servers()
    spec = next(s for s in specs if s.name == "python3")
    view = qsbench.load_view(Path(__file__).resolve().parent.parent / "views" / "income", "python")
    runs = {d: qsbench.run_shard(spec, view, docs.lines, docs.ids, driver=d) for d in DRIVERS}
    assert runs["c"].answers == runs["python"].answers and len(runs["c"].answers) == len(docs)
    assert [r.driver for r in runs.values()] == list(DRIVERS)


@pytest.mark.parametrize("loop", DRIVERS)
def test_a_line_longer_than_the_pipe(loop):
    qs = _started("echo", "-")
    try:
        got = driver.map_loop(qs, _lines(3, pad=300_000), loop)
    finally:
        qs.close()
    assert got.answers == [json.dumps([[[f"d{i}", 1]]]).encode() for i in range(3)]


@pytest.mark.parametrize("loop", DRIVERS)
@pytest.mark.parametrize("mode,raised,text", [
    ("error", QueryServerError, "answered error bad_doc: d0"),
    ("fatal", QueryServerError, "answered fatal oops: d0"),
    ("selfkill", QueryServerDied, "was killed by signal 9 while reading"),
])
def test_failures_raise_what_the_python_loop_raises(loop, mode, raised, text):
    qs = _started(mode, "-")
    try:
        with pytest.raises(raised) as err:
            driver.map_loop(qs, _lines(5), loop)
    finally:
        qs.kill()
        qs.close()
    assert text in str(err.value)
    if mode == "fatal":
        assert err.value.fatal and qs.stats is not None   # killed and reaped, as CouchDB does


@pytest.mark.parametrize("loop", DRIVERS)
def test_no_answer_times_out_and_kills(loop):
    qs = _started("hang", "-")      # the start's reset may take longer than 0.5 s on a loaded machine
    qs.timeout = 0.5
    try:
        with pytest.raises(QueryServerTimeout, match="no answer within 0.5 s"):
            driver.map_loop(qs, _lines(5), loop)
        assert qs.stats is not None and qs.stats.returncode == -9
    finally:
        qs.close()


@pytest.mark.parametrize("loop", DRIVERS)
def test_garbage_comes_back_as_the_answer(loop):
    # not JSON is the checker's business (qsbench._parse_answer), as in prompt_raw
    qs = _started("garbage", "-")
    try:
        assert driver.map_loop(qs, _lines(2), loop).answers == [b"this is not json"] * 2
    finally:
        qs.close()


def test_bad_driver_name():
    with pytest.raises(UsageError, match="must be one of auto, c, python"):
        driver.resolve("rust")
