"""The query-server protocol client against real processes: couchpy (CouchDB-Python 1.2) and tests/qs_testserver.py."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from dragnet.servers.protocol import (BadAnswer, ProtocolError, QueryServerDied, QueryServerError, QueryServerProcess, QueryServerTimeout, encode)

COUCHPY = str(Path(sys.executable).with_name("couchpy"))
TESTSERVER = [sys.executable, str(Path(__file__).with_name("qs_testserver.py"))]
RESET = ["reset", {"reduce_limit": True, "timeout": 5000}]

MAP_WITH_LOG = '''def fun(doc):
    log("seen %s" % doc["_id"])
    yield doc["_id"], doc.get("n", 0) * 2
'''


@pytest.fixture()
def couchpy():
    if not os.access(COUCHPY, os.X_OK):
        pytest.fail(f"couchpy missing at {COUCHPY} (pip install couchdb==1.2, the test extra)")
    qs = QueryServerProcess([COUCHPY], timeout=10)
    yield qs
    qs.close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_couchpy_reset_add_fun_map_doc(couchpy):
    assert couchpy.prompt(RESET) is True
    assert couchpy.prompt(["add_fun", MAP_WITH_LOG]) is True
    raw = couchpy.prompt_raw(encode(["map_doc", {"_id": "a", "n": 21}]))
    assert isinstance(raw, bytes) and not raw.endswith(b"\n")
    assert json.loads(raw) == [[["a", 42]]]
    # the log line came before the answer and was collected, not returned
    assert couchpy.logs == ["seen a"]
    assert couchpy.prompt(["map_doc", {"_id": "b", "n": 1}]) == [[["b", 2]]]
    assert couchpy.logs == ["seen a", "seen b"] and couchpy.log_count == 2


def test_many_log_lines_before_one_answer():
    with QueryServerProcess(TESTSERVER + ["log", "50"]) as qs:
        assert qs.prompt(["map_doc", {"_id": "x"}]) == [[["x", 1]]]
        assert qs.prompt(["map_doc", {"_id": "y"}]) == [[["y", 1]]]
        assert qs.log_count == 100
        assert qs.logs[0] == "log 0 for x" and qs.logs[-1] == "log 49 for y"


def test_error_answer_raises_and_process_lives_on(couchpy):
    couchpy.prompt(RESET)
    with pytest.raises(QueryServerError) as info:
        couchpy.prompt(["add_fun", "def fun(doc):\n    yield ("])
    assert info.value.error_id == "map_compilation_error" and not info.value.fatal
    assert "couchpy" in str(info.value)
    # CouchDB keeps the process after an ["error", ...]; so does the client
    assert couchpy.prompt(["add_fun", MAP_WITH_LOG]) is True
    assert couchpy.prompt(["map_doc", {"_id": "ok", "n": 1}]) == [[["ok", 2]]]


def test_error_per_document():
    with QueryServerProcess(TESTSERVER + ["error"]) as qs:
        with pytest.raises(QueryServerError) as info:
            qs.prompt(["map_doc", {"_id": "doc-7"}])
        assert (info.value.error_id, info.value.reason) == ("bad_doc", "doc-7")
        assert qs.prompt(["reset", {}]) is True


def test_fatal_answer_kills_the_process():
    qs = QueryServerProcess(TESTSERVER + ["fatal"])
    with pytest.raises(QueryServerError) as info:
        qs.prompt(["map_doc", {"_id": "z"}])
    assert info.value.fatal and info.value.error_id == "oops"
    assert not _alive(qs.pid)
    qs.close()


def test_death_on_unknown_command_reports_exit_code_and_stderr(couchpy):
    couchpy.prompt(RESET)
    with pytest.raises(QueryServerDied) as info:
        couchpy.prompt(["no_such_command"])
    exc = info.value
    assert exc.returncode == 1
    # couchpy logs the KeyError to stderr before exiting
    assert "no_such_command" in exc.stderr_tail
    assert "exited with code 1" in str(exc) and "no_such_command" in str(exc)
    assert not _alive(couchpy.pid)


def test_death_mid_run_with_stderr_tail():
    argv = TESTSERVER + ["crash-after", "3", "--", COUCHPY]
    qs = QueryServerProcess(argv, name="crashy")
    qs.prompt(RESET)
    qs.prompt(["add_fun", MAP_WITH_LOG])
    for i in range(3):
        assert qs.prompt(["map_doc", {"_id": f"d{i}", "n": i}]) == [[[f"d{i}", 2 * i]]]
    with pytest.raises(QueryServerDied) as info:
        qs.prompt(["map_doc", {"_id": "d3", "n": 3}])
    assert info.value.returncode == 3
    assert "boom after 3 docs" in info.value.stderr_tail
    assert "crashy exited with code 3" in str(info.value)
    stats = qs.close()
    assert stats.returncode == 3


def test_killed_by_signal():
    qs = QueryServerProcess(TESTSERVER + ["selfkill"])
    with pytest.raises(QueryServerDied) as info:
        qs.prompt(["map_doc", {"_id": "a"}])
    assert info.value.returncode == -9
    assert "killed by signal 9" in str(info.value)


def test_timeout_kills_a_server_that_stops_answering():
    qs = QueryServerProcess(TESTSERVER + ["hang"])     # its start may take longer than 0.5 s on a loaded machine
    assert qs.prompt(["reset", {}]) is True
    qs.timeout = 0.5
    t0 = time.monotonic()
    with pytest.raises(QueryServerTimeout) as info:
        qs.prompt(["map_doc", {"_id": "a"}])
    took = time.monotonic() - t0
    assert 0.45 <= took < 5
    assert "no answer within 0.5 s" in str(info.value)
    assert not _alive(qs.pid)


def test_timeout_while_writing_to_a_server_that_does_not_read():
    qs = QueryServerProcess(TESTSERVER + ["deaf"], timeout=0.5)
    with pytest.raises(QueryServerTimeout) as info:
        # far more than a pipe buffer holds: the write itself blocks until the watchdog kills the server
        qs.prompt(["map_doc", {"_id": "a", "blob": "x" * 2_000_000}])
    assert "while writing" in str(info.value)
    assert qs.close().returncode == -9


def test_invalid_json_answer():
    with QueryServerProcess(TESTSERVER + ["garbage"]) as qs:
        with pytest.raises(BadAnswer) as info:
            qs.prompt(["map_doc", {"_id": "a"}])
        assert "this is not json" in str(info.value)
        # the raw path hands the bytes back untouched
        assert qs.prompt_raw(encode(["map_doc", {"_id": "b"}])) == b"this is not json"


def test_large_document_larger_than_the_pipe_buffer(couchpy):
    couchpy.prompt(RESET)
    couchpy.prompt(["add_fun", "def fun(doc):\n    yield doc['_id'], len(doc['blob'])\n"])
    blob = "ж" * 600_000  # 1.2 MB of UTF-8: many partial writes and reads
    assert couchpy.prompt(["map_doc", {"_id": "big", "blob": blob}]) == [[["big", 600_000]]]
    # and a big answer back
    couchpy.prompt(RESET)
    couchpy.prompt(["add_fun", "def fun(doc):\n    yield doc['_id'], doc['blob']\n"])
    assert couchpy.prompt(["map_doc", {"_id": "big", "blob": blob}]) == [[["big", blob]]]


def test_close_reports_cpu_and_peak_rss(couchpy):
    couchpy.prompt(RESET)
    couchpy.prompt(["add_fun", "def fun(doc):\n    yield doc['_id'], sum(range(20000))\n"])
    for i in range(200):
        couchpy.prompt(["map_doc", {"_id": str(i)}])
    stats = couchpy.close()
    assert stats.returncode == 0  # stdin closed: couchpy's loop ends normally
    assert stats.cpu_s > 0.05
    # a Python interpreter is several MB; VmHWM is in kB
    assert 5_000 < stats.peak_rss_kb < 1_000_000
    assert stats.cpu_before_close_s is not None and stats.cpu_before_close_s <= stats.cpu_s + 0.02
    assert not _alive(stats.pid)


def test_cannot_start_a_missing_program(tmp_path):
    with pytest.raises(ProtocolError) as info:
        QueryServerProcess([str(tmp_path / "nope")], name="ghost")
    assert "cannot start query server ghost" in str(info.value)
