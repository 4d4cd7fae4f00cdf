"""The disk growth carried by the final index, and the view writer's queue cap that bounds it (pure)."""

import pytest

from dragnet.forecast import model as fc
from dragnet.forecast import writer_queue as wq

MIB = 1024 ** 2


def test_queue_cap_is_the_sweeps_config_axis_then_the_nodes_setting_then_the_versions_default():
    assert wq.queue_cap({"version": "3.5.2"}) == (10_485_760, "CouchDB 3.5.2's default")
    assert wq.queue_cap({"version": "3.5.0"}) == (100_000, "CouchDB 3.5.0's default")
    assert wq.queue_cap({"version": "3.5.1"})[0] == 100_000 and wq.queue_cap({"version": "3.6.0"})[0] == 10_485_760
    node = {"version": "3.5.0", "view_updater": {"queue_memory_cap": "10485760", "min_writer_items": "100"}}
    assert wq.queue_cap(node) == (10_485_760, "set on the node")
    axes = ["view_updater/queue_memory_cap=1073741824,smoosh.ratio_views/min_priority=1000000"] * 2
    assert wq.queue_cap(node, axes) == (1_073_741_824, "the sweep's --config")
    # builds that ran with different caps share none: the node's (the forecast is one per variant)
    assert wq.queue_cap(node, ["view_updater/queue_memory_cap=1", "view_updater/queue_memory_cap=2"])[0] == 10_485_760
    assert wq.queue_cap(None) is None and wq.queue_cap({"version": "main"}) is None
    assert wq.queue_cap({"version": "3.5.2", "view_updater": {"queue_memory_cap": "lots"}}) is None


def _builds(ratios: dict[int, list[float]], row_bytes: float = 1000.0) -> list[wq.Build]:
    # a final index of 2 KiB a document; the growth that many times it
    return [wq.Build(n, r * n * 2048, n * 2048, row_bytes * n) for n, rs in ratios.items() for r in rs]


FINAL = {"value": 200 * MIB, "low": 190 * MIB, "high": 210 * MIB}


def test_by_final_carries_the_largest_sizes_ratio_where_it_settled_and_the_shards_fit_the_queue():
    b = _builds({2500: [1.5, 1.5], 10000: [1.9, 2.0], 20000: [1.8, 1.9]})
    by = wq.by_final(b, FINAL, 100_000, 16, (10_485_760, "x"), 0.10)
    assert by["ratio"] == pytest.approx(1.85) and by["value"] == pytest.approx(200 * MIB * 1.85)
    assert by["low"] == pytest.approx(190 * MIB * 1.8) and by["high"] == pytest.approx(210 * MIB * 2.0)
    assert by["spread"] == pytest.approx(0.2 / 1.85) and by["open"] is not None      # 10.8 % > 10 %
    by = wq.by_final(_builds({10000: [1.85, 1.9], 20000: [1.8, 1.9]}), FINAL, 100_000, 16, (10_485_760, "x"), 0.10)
    assert by["open"] is None and by["ratios"] == {"10000": [1.85, 1.9], "20000": [1.8, 1.9]}
    q = by["queue"]
    assert q["batch_docs"] == pytest.approx(10_485.76) and q["target_shard_docs"] == 6250
    assert q["sweep_shard_docs"] == 1250 and q["row_bytes_per_doc"] == pytest.approx(1000.0)


def test_by_final_is_open_where_the_targets_shards_hold_more_than_the_writers_queue():
    b = _builds({10000: [1.6, 1.6], 20000: [1.65, 1.65]}, row_bytes=5120)
    by = wq.by_final(b, FINAL, 100_000, 8, (10_485_760, "CouchDB 3.5.2's default"), 0.10)
    assert by["queue"]["batch_docs"] == pytest.approx(2048)
    assert by["open"].startswith("a shard of the target holds 12,500 documents, more than 2 × the 2,048 the view "
                                 "writer's queue holds (queue_memory_cap 10,485,760 bytes, CouchDB 3.5.2's default, "
                                 "over 5,120 bytes of rows a document)")
    # up to twice what the queue holds a shard's file stayed within the goal (queue-cap/aa352-k, w352-k)
    assert wq.by_final(b, FINAL, 4096 * 8, 8, (10_485_760, "x"), 0.10)["open"] is None
    assert wq.by_final(b, FINAL, 4097 * 8, 8, (10_485_760, "x"), 0.10)["open"] is not None
    # at 3.5.0's 100 KB the queue holds 20 such documents: a sweep never carries there
    assert wq.by_final(b, FINAL, 100_000, 8, (100_000, "x"), 0.10)["queue"]["batch_docs"] < 20
    # no cap known, no rows recorded: open, and says why
    assert "cannot be told" in wq.by_final(b, FINAL, 100_000, 8, None, 0.10)["open"]
    bare = [wq.Build(x.docs, x.growth, x.final) for x in b]
    assert "cannot be told" in wq.by_final(bare, FINAL, 100_000, 8, (10_485_760, "x"), 0.10)["open"]


def test_by_final_needs_two_sizes_and_the_final_index():
    assert wq.by_final(_builds({20000: [1.8, 1.9]}), FINAL, 100_000, 8, (1, "x"), 0.1) is None
    assert wq.by_final(_builds({10000: [1.8], 20000: [1.9]}), None, 100_000, 8, (1, "x"), 0.1) is None


def _run(n: int, ratio: float, row_bytes: float, config: str | None = None) -> dict:
    final = n * 2048
    r = {"status": "ok", "size": n, "language": "javascript",
         "sizes": {"peak_disk": {"growth": final * ratio, "other_indexes": 0, "compaction": 0},
                   "after": {"index": {"file": final * ratio, "external": row_bytes * n}},
                   "compacted": {"settled": True, "sizes": {"file": final}}}}
    if config:
        r["axes"] = {"config": config}
    return r


def test_forecast_sweep_takes_the_growth_by_the_final_index_where_it_is_decided():
    # the growth over the final index stays near 1.8 from 5,000 up, while its shapes (fitted to the growth
    # itself) curve: the value is the final index's forecast times 1.8, within an interval that holds both
    runs = [_run(n, r, 1000) for n, r in ((2500, 1.3), (2500, 1.35), (5000, 1.75), (5000, 1.8), (10000, 1.85),
                                          (10000, 1.8), (20000, 1.8), (20000, 1.82))]
    f = fc.forecast_sweep(runs, 100_000, target_q=16, couchdb={"version": "3.5.2"})["javascript"]["quantities"]
    g, final = f["disk_growth"], f["index_compacted"]["prediction"]
    assert g["by_final"]["open"] is None and g["prediction"]["model"] == "by_final"
    assert g["prediction"]["value"] == pytest.approx(final["value"] * 1.81)
    assert g["prediction"]["low"] <= g["by_final"]["low"] and g["prediction"]["high"] >= g["by_final"]["high"]
    assert g["basis"].startswith("the final index × 1.81")
    # the same sweep on 3.5.0 (a 100 KB queue) or a target in 2 shards: not carried, and a warning says why
    for kw in ({"target_q": 16, "couchdb": {"version": "3.5.0"}}, {"target_q": 2, "couchdb": {"version": "3.5.2"}}):
        g = fc.forecast_sweep(runs, 100_000, **kw)["javascript"]["quantities"]["disk_growth"]
        assert g["prediction"].get("model") != "by_final"
        assert any(w.startswith("disk_growth: not carried by the final index: a shard of the target holds")
                   for w in g["warnings"])
    # a sweep that set the cap itself: its value counts
    big = [_run(n, r, 1000, "view_updater/queue_memory_cap=1073741824") for n, r in
           ((5000, 1.8), (10000, 1.8), (20000, 1.8))]
    g = fc.forecast_sweep(big, 100_000, target_q=2, couchdb={"version": "3.5.0"})["javascript"]["quantities"]
    assert g["disk_growth"]["by_final"]["queue"]["cap_source"] == "the sweep's --config"
    assert g["disk_growth"]["by_final"]["open"] is None
