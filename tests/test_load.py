"""The load beside a build and keepup, without a server: rates, the open-loop schedule, window figures,
lost writes, the lag's verdict, the --load axis, the report's slowdown; bad input refused before anything runs."""

import math

import pytest
from click.testing import CliRunner

from dragnet.axes import load as axis_load
from dragnet.axes.model import BESIDE, plan_product
from dragnet.bench.keepup import parse_readers
from dragnet.bench.switch import AxisOptions
from dragnet.errors import UsageError
from dragnet.load import lag as L
from dragnet.load import spec as S
from dragnet.load.generator import Request, event_loop_factory, require_loopback, window_figures
from dragnet.report import load as report_load
from dragnet.report.columns import headers


# ---- rates and load specs

def test_rates_parse_per_second_minute_hour():
    assert S.parse_rate("200/s", "x") == 200.0
    assert S.parse_rate("30/min", "x") == 0.5
    assert S.parse_rate("3600/h", "x") == 1.0
    assert S.parse_rate(" 2.5 / s ", "x") == 2.5


@pytest.mark.parametrize("text", ["200", "fast/s", "200/day", "0/s", "-5/s", "1e3/s", ""])
def test_bad_rates_are_refused_in_one_line(text):
    with pytest.raises(UsageError) as e:
        S.parse_rate(text, "--load writes")
    assert "\n" not in str(e.value) and "--load writes" in str(e.value)


def test_a_load_keeps_its_kinds_in_a_fixed_order_and_none_is_idle():
    spec = S.parse("reads=100/s, writes=200/s,view-reads=20/s")
    assert spec.rates == (("writes", 200.0), ("reads", 100.0), ("view-reads", 20.0))
    assert spec.text() == "writes=200/s,reads=100/s,view-reads=20/s"
    assert spec.reads_view and spec.writes and spec.total == 320.0
    assert S.parse("none").idle and S.parse("NONE").text() == "none"


@pytest.mark.parametrize("text,needle", [
    ("writes=200/s,writes=10/s", "given twice"), ("deletes=5/s", "unknown kind"), ("writes", "KIND=RATE"),
    ("writes=-5/s", "above zero"), ("reads=abc", "not a rate"), ("", "empty")])
def test_bad_loads_are_refused(text, needle):
    with pytest.raises(UsageError, match=needle):
        S.parse(text)


def test_axis_values_split_at_none_and_at_a_kind_seen_again():
    assert S.split_values("none,writes=200/s,reads=10/s") == ["none", "writes=200/s,reads=10/s"]
    assert S.split_values("writes=100/s,writes=200/s") == ["writes=100/s", "writes=200/s"]
    assert S.split_values("writes=1/s;reads=2/s") == ["writes=1/s", "reads=2/s"]
    assert S.parse_values(("none", "writes=200/s,updates=50/s")) == ["none", "writes=200/s,updates=50/s"]
    with pytest.raises(UsageError, match="given twice"):
        S.parse_values("none;none")


# ---- the open-loop schedule

def test_due_times_are_fixed_by_the_rate_not_by_answers():
    times = list(S.due_times(4.0, 10.0, 11.0))
    assert times == [10.0, 10.25, 10.5, 10.75]
    assert S.due_count(4.0, 1.0) == 4 and S.due_count(3.0, 0.5) == 2 and S.due_count(10, 0) == 0


def test_held_within_five_percent():
    assert S.held(100, 95.5) and S.held(100, 104.9)
    assert not S.held(100, 94.0) and not S.held(100, None)


def test_window_figures_count_per_window_with_conflicts_apart_and_latency_from_due():
    reqs = [Request("writes", due=0.1 * i, sent=0.1 * i + 0.01, end=0.1 * i + 0.05) for i in range(10)]
    reqs[3].status, reqs[3].reason = 409, S.reason_of(409, "conflict")
    reqs[4].reason = "refused"
    reqs.append(Request("reads", due=0.2, sent=0.2, end=0.3))
    f = window_figures(reqs, [("writes", 0.95)], "writes", 10.0, 0.0, 1.0)
    assert f["sent"] == 10 and f["ok"] == 8 and f["conflicts"] == 1 and f["errors"] == {"refused": 1}
    assert f["not_sent"] == 1 and f["due"] == 10
    assert math.isclose(f["latency"]["p50_ms"], 50.0) and math.isclose(f["service"]["max_ms"], 40.0)
    assert math.isclose(f["late"]["max_ms"], 10.0)
    assert math.isclose(f["achieved_per_s"], 10.0)
    # a window too short to judge the rate says nothing about holding it
    assert f["held"] is None


def test_achieved_counts_what_left_in_the_window_so_a_late_generator_shows():
    # 40 due in 1 s, but the generator sent the second half only after the window
    reqs = [Request("reads", due=i / 40, sent=(i / 40 if i < 20 else 1.5), end=2.0) for i in range(40)]
    f = window_figures(reqs, [], "reads", 40.0, 0.0, 1.0)
    assert f["achieved_per_s"] == 20.0 and f["held"] is False


def test_latency_summary_and_reasons():
    s = S.latency_summary([0.001, 0.002, 0.003, 0.1])
    assert s["n"] == 4 and s["max_ms"] == 100.0 and s["p50_ms"] == pytest.approx(2.5)
    assert S.latency_summary([]) is None
    assert S.reason_of(409, "conflict") == "conflict"
    assert S.reason_of(500, "badarg") == "500 badarg"
    assert S.reason_of(None, "refused") == "refused"


def test_a_lost_write_is_a_missing_id_or_another_rev():
    acked = {"a": "1-x", "b": "2-y", "c": "1-z"}
    assert S.lost_writes(acked, {"a": "1-x", "b": "2-y", "c": "1-z"}) == []
    lost = S.lost_writes(acked, {"a": "1-x", "b": "1-old", "c": None})
    assert [w["id"] for w in lost] == ["b", "c"] and lost[0]["found_rev"] == "1-old"


def test_seq_numbers_of_clustered_and_plain_sequences():
    assert S.seq_number("1234-g1AAAAFTeJzLYWBgYMpgTmHgz8tPSTV0") == 1234
    assert S.seq_number(57) == 57 and S.seq_number(None) is None and S.seq_number("now") is None


def test_the_load_goes_to_loopback_only():
    require_loopback("http://127.0.0.1:5984")
    require_loopback("http://localhost:5984")
    with pytest.raises(UsageError, match="loopback"):
        require_loopback("http://10.1.2.3:5984")


# ---- the lag

def test_lag_bounded_when_the_trend_is_small_or_the_end_is_near():
    flat = [{"t": t, "lag": 50 + (10 if t % 5 == 0 else 0)} for t in range(30)]
    assert L.verdict(flat, 100)["kept_up"] is True
    growing = [{"t": t, "lag": 40 * t} for t in range(30)]
    v = L.verdict(growing, 100)
    assert v["kept_up"] is False and v["growth_per_s"] == pytest.approx(40) and "grew" in v["why"]
    # grows, but ends within two seconds of writing: bounded
    assert L.verdict([{"t": t, "lag": 10 * t} for t in range(10)], 100)["kept_up"] is True
    assert L.verdict([{"t": 0, "lag": 1}], 100)["kept_up"] is None


def test_slope_and_keeps_up_to():
    assert L.slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2)
    assert L.slope([1, 1], [0, 5]) is None
    steps = [{"rate": 25, "kept_up": True}, {"rate": 50, "kept_up": True}, {"rate": 100, "kept_up": False}]
    assert L.keeps_up_to(steps) == 50
    assert L.keeps_up_to([{"rate": 25, "kept_up": False}]) is None
    assert L.keeps_up_to([{"rate": 25, "kept_up": True}, {"rate": 50, "kept_up": None}]) == 25


def test_rates_and_readers_of_keepup():
    assert L.parse_rates("25,50,100") == [25.0, 50.0, 100.0]
    assert L.parse_rates("30/min,1/s") == [0.5, 1.0]
    with pytest.raises(UsageError, match="rates go up"):
        L.parse_rates("100,50")
    with pytest.raises(UsageError):
        L.parse_rates("50,-1")
    assert parse_readers("none,2/s") == ["none", "2/s"]
    assert parse_readers("5") == ["5/s"]
    with pytest.raises(UsageError):
        parse_readers("some")


# ---- the axis

def test_load_is_one_beside_axis_interleaved_in_the_rounds():
    opts = AxisOptions.from_options({"load_text": ("none,writes=200/s",)})
    (axis,) = opts.axes(None)
    assert axis.name == "load" and axis.how == BESIDE and axis.values == ["none", "writes=200/s"]
    pts = plan_product([axis, __import__("dragnet.axes.model", fromlist=["Axis"]).Axis("language", ["js", "qjs"])], 2)
    assert [(p.repeat, p.values["load"]) for p in pts][:4] == [(0, "none"), (0, "none"), (0, "writes=200/s"),
                                                               (0, "writes=200/s")]

    class Ctx:
        url = "http://127.0.0.1:5984"
        on_event = staticmethod(lambda *_: None)
    assert axis.beside("none", Ctx()) is None
    b = axis.beside("writes=200/s", Ctx())
    assert b.spec.rate("writes") == 200.0 and b.before_s == axis_load.BEFORE_S
    axis.check_once(Ctx())
    Ctx.url = "http://192.0.2.1:5984"
    with pytest.raises(UsageError):
        axis.check_once(Ctx())


def test_bad_load_is_refused_before_anything_runs():
    from dragnet.cli import main

    r = CliRunner().invoke(main, ["bench", "--url", "http://127.0.0.1:1", "--db", "x", "--load", "writes=-5/s"])
    assert r.exit_code == 2 and "above zero" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["keepup", "--url", "http://127.0.0.1:1", "--db", "x", "--rates", "fast"])
    assert r.exit_code == 2 and "--rates" in r.output


# ---- the report

def _doc(lang, load, repeat, wall, docs=1000, bench_id="bench-1"):
    return {"summary": {"ok": True, "wall_time_s": wall, "docs": docs, "docs_per_sec_wall": docs / wall},
            "bench": {"id": bench_id, "language": lang, "repeat": repeat,
                      "axes": {"language": lang, "storage": "disk", "scenario": "", "size": None, "load": load}}}


def test_slowdown_is_paired_by_round_against_the_idle_build():
    docs = []
    for r, (idle, loaded) in enumerate([(10, 15), (20, 30), (12, 18.5), (11, 16)]):
        docs += [_doc("javascript", "none", r, idle), _doc("javascript", "writes=200/s", r, loaded)]
    (row,) = report_load.slowdowns(docs)
    assert row["load"] == "writes=200/s" and row["paired_rounds"] == 4
    assert 1.45 < row["ratio"] < 1.55 and 1.3 < row["low"] < row["ratio"] < row["high"] < 1.7
    assert row["verdict"] == "separated"
    rendered = report_load.slowdown_rows([row])[0]
    assert rendered[8].startswith("×1.5") and rendered[9] == "separated"


def test_rounds_of_two_bench_folders_are_all_paired_not_overwritten():
    # a study run in parts: two benches, each with its rounds 0 and 1
    docs = []
    for bench_id, pairs in (("bench-a", [(10, 15), (20, 30)]), ("bench-b", [(12, 18.5), (11, 16)])):
        for r, (idle, loaded) in enumerate(pairs):
            docs += [_doc("javascript", "none", r, idle, bench_id=bench_id),
                     _doc("javascript", "writes=200/s", r, loaded, bench_id=bench_id)]
    (row,) = report_load.slowdowns(docs)
    assert row["rounds"] == 4 and row["paired_rounds"] == 4 and row["idle_wall_s"] == 11.5
    assert 1.45 < row["ratio"] < 1.55 and row["verdict"] == "separated"


def test_slowdown_without_an_idle_build_says_so_and_no_load_no_section():
    (row,) = report_load.slowdowns([_doc("javascript", "writes=200/s", 0, 10)])
    assert "ratio" not in row and "no idle build" in report_load.slowdown_rows([row])[0][9]
    assert report_load.section([{"summary": {"ok": True}, "bench": {"axes": {"language": "x"}}}]) is None


def test_lost_writes_and_rates_not_held_are_warned():
    d = _doc("javascript", "writes=200/s", 0, 10)
    d["load"] = {"spec": "writes=200/s", "not_held": ["writes"], "writes_check": {"acknowledged": 5, "lost": 1},
                 "kinds": {}}
    w = report_load.warnings([d])
    assert any("did not hold" in x for x in w) and any("LOST" in x for x in w)


def test_request_and_write_rows_tell_apart_builds_of_one_round_on_two_couchdbs():
    # bench --couchdb A,B --load …: both versions' loaded builds are round 1 of the same engine
    load = {"spec": "writes=20/s", "kinds": {"writes": {"asked_per_s": 20, "build": {"ok": 3, "latency": {}}}},
            "writes_check": {"acknowledged": 3, "lost": 0}, "purge": {"purged": 3, "written": 3}}
    docs = []
    for image, bench_id in (("couchdb:3.5.0", "bench-a"), ("couchdb:3.5.2", "bench-a"), ("couchdb:3.5.0", "bench-b")):
        d = _doc("javascript", "writes=20/s", 0, 10, bench_id=bench_id)
        d["bench"]["axes"]["couchdb"] = image
        d["load"] = load
        docs.append(d)
    req, wr = report_load.request_rows(docs), report_load.write_rows(docs)
    assert [r[1] for r in req] == [r[1] for r in wr] == ["disk couchdb=couchdb:3.5.0", "disk couchdb=couchdb:3.5.2",
                                                          "disk couchdb=couchdb:3.5.0"]
    # two benches reported together each number their rounds from 1: the round names its bench
    assert [r[2] for r in wr] == ["bench-a 1", "bench-a 1", "bench-b 1"]
    assert [r[2] for r in report_load.write_rows(docs[:2])] == ["1", "1"]
    assert len(headers(report_load.REQUESTS)) == len(req[0]) and len(headers(report_load.WRITES)) == len(wr[0])


def test_view_reads_on_builds_with_no_view_are_refused():
    axis_load.refuse_view_reads(["none", "writes=5/s"], "no view")
    with pytest.raises(UsageError, match="view-reads on builds with no view"):
        axis_load.refuse_view_reads(["none", "writes=5/s,view-reads=1/s"], "--mango")


def test_a_later_rev_keeps_the_write_only_when_it_descends_from_the_acknowledged_one():
    history = {"start": 3, "ids": ["ccc", "bbb", "aaa"]}
    assert S.descends("2-bbb", history) and S.descends("3-ccc", history) and S.descends("1-aaa", history)
    assert not S.descends("2-zzz", history) and not S.descends("4-ddd", history) and not S.descends("x", history)
    acked = {"a": "2-bbb", "b": "2-bbb"}
    lost = S.lost_writes(acked, {"a": "3-ccc", "b": "3-ccc"}, {"a": history, "b": {"start": 3, "ids": ["c", "q", "a"]}})
    assert [w["id"] for w in lost] == ["b"]


def test_forecast_refuses_a_bad_load_before_anything():
    from dragnet.cli import main

    r = CliRunner().invoke(main, ["forecast", "--url", "http://127.0.0.1:1", "--db", "x", "--target-docs", "1000",
                                  "--load", "writes=fast"])
    assert r.exit_code == 2 and "not a rate" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_saw_toothed_lag_that_comes_back_is_bounded_and_one_that_never_does_is_not():
    # ken: the lag climbs for 48 s, then the index catches up at once
    saw = [{"t": t, "lag": (t % 48) * 0.9} for t in range(60)]
    v = L.verdict(saw, 2)
    assert v["kept_up"] is True and "came back" in v["why"] and v["lag_max"] > 40
    # the first 20 s of the same saw: no catching up seen yet
    assert L.verdict(saw[:20], 2)["kept_up"] is False


# ---- the load's event loop

def test_the_load_runs_on_uvloop_and_names_it():
    import asyncio

    import uvloop

    factory, name = event_loop_factory()
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop) and isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()
    assert name == f"uvloop {uvloop.__version__}"


def test_the_load_falls_back_to_asyncios_loop_where_uvloop_cannot_load(monkeypatch):
    import asyncio
    import sys

    monkeypatch.setitem(sys.modules, "uvloop", None)     # `import uvloop` raises ImportError
    factory, name = event_loop_factory()
    assert name == "asyncio" and factory is asyncio.new_event_loop
    assert event_loop_factory("asyncio")[1] == "asyncio"


def test_a_view_that_never_moved_while_the_database_did_is_ken_skipping_it():
    from dragnet.report.load import keepup_lines

    def step(rate, db, view):
        return {"rate": rate, "kept_up": False, "why": "lag grew",
                "samples": [{"t": i, "db_seq": d, "view_seq": v} for i, (d, v) in enumerate(zip(db, view))]}

    skipped = [step(5, [100, 105, 110, 115], [100, 100, 100, 100])]
    assert L.never_updated(skipped)
    # ken updated it once, however late: an indexer too slow, not one that never ran
    assert not L.never_updated([step(5, [100, 105, 110, 115], [100, 100, 110, 110])])
    # nothing written: nothing to say
    assert not L.never_updated([step(5, [100, 100, 100], [100, 100, 100])]) and not L.never_updated([])
    res = {"engines": [{"engine": "javascript_quickjs", "full_build_s": 3.0, "modes": [
        {"readers": "none", "steps": skipped, "keeps_up_to": None, "never_updated": True}]}]}
    lines = keepup_lines(res)
    assert lines[0].startswith("javascript_quickjs, no readers (ken): keeps up with none of the rates tried")
    assert "ken did not build it" in lines[1]


def test_the_writes_table_names_the_generator_that_ran():
    from dragnet.report.load import write_rows

    def doc(**extra):
        return {"bench": {"language": "javascript", "round": 1},
                "load": {"spec": "writes=5/s", "writes_check": {"acknowledged": 3, "lost": 0}, "written_during_build": 3,
                         "index": {"changes_not_indexed": 0}, "purge": {"purged": 3, "written": 3},
                         "cpu_share_of_core": 0.05, **extra}}

    go, older = write_rows([doc(driver="go"), doc()])
    assert go[-1].endswith("(go)") and go[-1].startswith("5")
    assert older[-1].endswith("(aiohttp)")     # a record from before the Go generator


def test_the_load_generators_send_the_sessions_basic_auth_header():
    # one encoder for every client: the Go generator gets this header on stdin, aiohttp sends it as it is;
    # UTF-8, as CouchDB decodes it (requests' latin-1 is refused for "adé:pä")
    import base64

    from dragnet.couchdb.client import connect

    auth = connect("http://ad%C3%A9:p%C3%A4@localhost:5984").session.auth
    assert auth.header() == "Basic " + base64.b64encode("adé:pä".encode("utf-8")).decode()
