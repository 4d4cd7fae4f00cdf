"""dragnet.measure.build_iostat: iostat on every build whose data device is known, and why it is absent."""

from __future__ import annotations

import pytest

from dragnet.measure import build_iostat as build_iostat
from dragnet.report import columns
from dragnet.report import io_table as io_table


def _result(label, storage, device, r_s, util, *, absent=None, scenario=None, ddoc="_design/app"):
    io = {"absent": absent, "device": None} if absent else {
        "device": device, "summary": {device: {"r_s": {"avg": r_s, "peak": r_s}, "util_pct": {"avg": util, "peak": util},
                                               "w_s": {"avg": 1.0}, "rkb_s": {"avg": 8.0}, "wkb_s": {"avg": 2.0},
                                               "r_await": {"avg": 0.5}},
                                      "other": {"r_s": {"avg": 999.0}}}}
    return {"summary": {"language": label, "ok": True}, "storage": storage, "iostat": io,
            "view": {"language": label, "design": {"id": ddoc}}, "bench": {"language": label, "storage_label": storage},
            **({"scenario": scenario} if scenario else {})}


def test_io_rows_medians_per_group_and_reasons():
    results = [_result("javascript", "disk", "vda", 10.0, 5.0), _result("javascript", "disk", "vda", 30.0, 15.0),
               _result("javascript", "disk", "vda", 20.0, 10.0), _result("bun", "disk", "vda", 4.0, 2.0),
               _result("bun", "tmpfs", None, None, None, absent="the data is on tmpfs"),
               _result("bun", "disk", "vda", 99.0, 99.0, scenario={"label": "mem 1g"})]
    groups, notes = io_table.io_rows(results)
    rows = columns.text_rows(columns.IO, groups)
    headers = columns.headers(columns.IO)
    assert [r[:5] for r in rows] == [["_design/app", "bun", "disk", "1", "vda"],
                                     ["_design/app", "javascript", "disk", "3", "vda"]]
    js = rows[1]
    assert js[headers.index("r/s")] == "20.0"      # the median, from the data's device only
    assert js[headers.index("%util")] == "10.0"
    assert notes == ["iostat absent from 1 build(s): the data is on tmpfs"]


def test_remote_couchdb_has_no_device(monkeypatch):
    from dragnet.couchdb.client import connect

    dev, data, why = build_iostat.data_device(connect("http://couch.example:5984"), "http://couch.example:5984")
    assert dev is None and data is None and why == "CouchDB at couch.example is not on this machine"


def test_live_addview_benchmark_records_iostat_or_why_not(live_url, live_db, tmp_path):
    from dragnet.index import addview as addview
    from dragnet.report.render import build_text as build_text

    couch, db = live_db
    couch.put(f"/{db}?q=1")
    couch.post(f"/{db}/_bulk_docs", {"docs": [{"_id": f"d{i}", "n": i} for i in range(50)]})
    view = tmp_path / "map.js"
    view.write_text("function (doc) { emit(doc.n, 1); }")
    res = addview.benchmark(url=live_url, db=db, view_path=str(view), language="javascript", pidstat=False,
                            results_dir=str(tmp_path / "r"))
    io = res["iostat"]
    dev, data, why = build_iostat.data_device(couch, live_url)
    if dev is None:
        assert io == {"argv": None, "device": None, "data_dir": data, "absent": why} and why
    else:
        assert io["argv"][:2] == ["iostat", "-dxyt"] and io["device"] == dev.name and io["data_dir"] == data
        assert set(io["summary"]) == {dev.name} and io["summary"][dev.name]["intervals"] >= 1
    assert any(line.startswith("iostat") for line in build_text.format_report(res))
