"""dragnet sample: the hash draw spreads over the whole id space; copying to a file and to a database."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from urllib.parse import parse_qs, urlsplit

import pytest

from dragnet.couch import connect, db_path
from dragnet.errors import UsageError
from dragnet.sample import (SizeDistribution, bottom_k_threshold, draw_sample, score, selected, split_db_url,
                            strip_doc)

IDS = [f"doc{i:06d}" for i in range(20_000)]


def test_fraction_draw_spreads_over_every_part_of_the_id_space():
    picked = [i for i, d in enumerate(IDS) if selected(d, 7, 0.05, inclusive=False)]
    assert 800 < len(picked) < 1200  # 1,000 expected; binomial σ ≈ 31
    # each tenth of the sorted ids holds about a tenth of the sample (not the first N ids)
    tenths = [sum(1 for i in picked if k * 2000 <= i < (k + 1) * 2000) for k in range(10)]
    assert min(tenths) > 60 and max(tenths) < 140, tenths
    assert picked[-1] > 19_000


def test_count_draw_is_exact_deterministic_and_spread():
    threshold, seen = bottom_k_threshold(iter(IDS), 500, seed=3)
    assert seen == len(IDS)
    picked = [d for d in IDS if selected(d, 3, threshold, inclusive=True)]
    assert len(picked) == 500
    assert picked == [d for d in IDS if selected(d, 3, bottom_k_threshold(iter(IDS), 500, 3)[0], True)]
    halves = sum(1 for d in picked if d < "doc010000"), sum(1 for d in picked if d >= "doc010000")
    assert 200 < halves[0] < 300 and 200 < halves[1] < 300
    other = [d for d in IDS if selected(d, 4, bottom_k_threshold(iter(IDS), 500, 4)[0], True)]
    assert len(set(other) & set(picked)) < 100  # another seed, another sample


def test_count_larger_than_database_takes_everything():
    threshold, _ = bottom_k_threshold(iter(IDS[:10]), 50, seed=1)
    assert all(selected(d, 1, threshold, True) for d in IDS[:10])


def test_score_is_uniform_and_depends_on_seed():
    s = [score(d, 1) for d in IDS]
    assert 0 <= min(s) and max(s) < 1
    assert abs(sum(s) / len(s) - 0.5) < 0.01
    assert score("a", 1) != score("a", 2)


def test_strip_doc_drops_attachments_and_optionally_rev():
    doc = {"_id": "a", "_rev": "1-x", "v": 1, "_attachments": {"f": {"stub": True}, "g": {"stub": True}}}
    assert strip_doc(doc, keep_rev=True) == ({"_id": "a", "_rev": "1-x", "v": 1}, 2)
    assert strip_doc(doc, keep_rev=False) == ({"_id": "a", "v": 1}, 2)


def test_size_distribution():
    d = SizeDistribution()
    for n in (10, 20, 30, 40, 1000):
        d.add(n)
    assert d.as_dict() == {"docs": 5, "bytes": 1100, "mean": 220.0, "p50": 30, "p90": 616.0, "p99": 961.6,
                           "max": 1000}


def test_split_db_url():
    assert split_db_url("http://u:p@h:5984/a%2Fb") == ("http://u:p@h:5984", "a/b")
    assert split_db_url("http://h:5984/x/db/") == ("http://h:5984/x", "db")
    with pytest.raises(UsageError) as exc:
        split_db_url("http://u:secret@h:5984")
    assert "secret" not in str(exc.value) and "***" in str(exc.value)


def _loopback_couch(docs: dict[str, dict]):
    """A loopback server answering GET /db and GET /db/_all_docs (limit, startkey, skip, include_docs)."""
    keys = sorted(docs)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            u = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(u.query).items()}
            if u.path == "/src":
                body = {"doc_count": len(docs)}
            else:
                start = json.loads(q["startkey"]) if "startkey" in q else ""
                rest = [k for k in keys if k >= start][int(q.get("skip", 0)):][:int(q["limit"])]
                body = {"rows": [dict({"id": k, "key": k, "value": {"rev": docs[k]["_rev"]}},
                                      **({"doc": docs[k]} if q.get("include_docs") == "true" else {}))
                                 for k in rest]}
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_sample_to_file_over_loopback_pages_the_whole_database(tmp_path):
    docs = {d: {"_id": d, "_rev": "1-a", "n": i, "pad": "x" * (i % 50)} for i, d in enumerate(IDS[:3000])}
    docs["_design/app"] = {"_id": "_design/app", "_rev": "1-d", "views": {}}
    docs["doc000007"]["_attachments"] = {"a.txt": {"stub": True}}
    srv = _loopback_couch(docs)
    try:
        couch = connect(f"http://127.0.0.1:{srv.server_address[1]}")
        out = tmp_path / "s.jsonl.gz"
        s = draw_sample(couch, "src", count=300, seed=1, to_file=out, page_size=250, batch_size=64)
    finally:
        srv.shutdown()
    got = [json.loads(line) for line in gzip.open(out, "rt")]
    assert len(got) == s.sampled == s.written == 300
    assert s.source_docs == 3000 and s.design_docs_skipped == 1
    assert all("_rev" not in d and "_attachments" not in d and not d["_id"].startswith("_design/") for d in got)
    ns = sorted(d["n"] for d in got)
    assert ns[0] < 100 and ns[-1] > 2900  # from the start to the end of the id space, across 12 pages
    assert s.source_sizes.as_dict()["docs"] == 3000 and s.sample_sizes.as_dict()["docs"] == 300
    assert s.sample_sizes.as_dict()["bytes"] == sum(len(json.dumps(d, separators=(",", ":"))) for d in got)


# ---------------------------------------------------------------------------------------------------
# Live CouchDB

def _fill(couch, db, n):
    couch.put(db_path(db))
    docs = [{"_id": f"d{i:05d}", "n": i, "text": "y" * (i % 97)} for i in range(n)]
    docs.append({"_id": "_design/app", "views": {"v": {"map": "function(d){emit(d.n)}"}}})
    couch.post(f"{db_path(db)}/_bulk_docs", {"docs": docs})
    gone = couch.put(f"{db_path(db)}/gone", {"x": 1})
    couch.request("DELETE", f"{db_path(db)}/gone", params={"rev": gone["rev"]})
    att = couch.put(f"{db_path(db)}/with_att", {"x": 2})
    couch.request("PUT", f"{db_path(db)}/with_att/a.txt", params={"rev": att["rev"]}, data=b"hello",
                  headers={"Content-Type": "text/plain"})


@pytest.mark.live
def test_live_sample_to_file_and_db_resumes(live_db, live_url, tmp_path):
    couch, db = live_db
    target = db + "_sample"
    _fill(couch, db, 2000)
    try:
        s = draw_sample(couch, db, fraction=0.5, seed=2, to_file=tmp_path / "s.jsonl.gz", page_size=300)
        assert s.source_docs == 2001 and s.design_docs_skipped == 1  # "gone" is deleted: not listed
        lines = [json.loads(x) for x in gzip.open(tmp_path / "s.jsonl.gz", "rt")]
        assert len(lines) == s.sampled and 850 < s.sampled < 1150
        ids = {d["_id"] for d in lines}
        assert "gone" not in ids and "_design/app" not in ids

        first = draw_sample(couch, db, count=400, seed=2, to_db=target, batch_size=150)
        assert first.sampled == first.written == 400 and first.already_present == 0
        info = couch.get(db_path(target))
        assert info["doc_count"] == 400
        row = couch.get(f"{db_path(target)}/_all_docs", params={"limit": 1, "include_docs": "true"})["rows"][0]
        assert row["doc"]["_rev"] == couch.get(f"{db_path(db)}/{row['id']}")["_rev"]  # _rev kept
        again = draw_sample(couch, db, count=400, seed=2, to_db=target, batch_size=150)
        assert again.written == 0 and again.already_present == 400  # a re-run resumes: nothing re-sent
        # sizes: the source's total equals the sum over every live non-design doc as stored
        every = couch.get(f"{db_path(db)}/_all_docs", params={"include_docs": "true"})["rows"]
        expected = sum(len(json.dumps({k: v for k, v in r["doc"].items() if k != "_attachments"},
                                      separators=(",", ":"), ensure_ascii=False).encode())
                       for r in every if not r["id"].startswith("_design/"))
        assert first.source_sizes.as_dict()["bytes"] == expected
        assert first.source_sizes.as_dict()["max"] == max(first.source_sizes.sizes)
        if "with_att" in ids or first.attachments_dropped:
            assert first.attachments_dropped == first.docs_with_attachments == 1
    finally:
        couch.request("DELETE", db_path(target), ok=(200, 202, 404))


def test_cache_path_is_keyed_without_credentials(tmp_path):
    from dragnet.sample import cache_path

    a = cache_path("http://admin:pw1@h:5984/big", count=100, fraction=None, seed=1, cache_dir=tmp_path)
    b = cache_path("http://other:pw2@h:5984/big", count=100, fraction=None, seed=1, cache_dir=tmp_path)
    assert a == b and "pw" not in str(a) and a.parent == tmp_path
    assert cache_path("http://h:5984/big", count=100, fraction=None, seed=2, cache_dir=tmp_path) != a
    assert cache_path("http://h:5984/big", count=None, fraction=0.1, seed=1, cache_dir=tmp_path) != a
    assert cache_path("http://h:5985/big", count=100, fraction=None, seed=1, cache_dir=tmp_path) != a
    assert cache_path("http://h:5984/other", count=100, fraction=None, seed=1, cache_dir=tmp_path) != a


@pytest.mark.live
def test_live_qsbench_docs_from_db_is_cached(live_db, live_url, tmp_path):
    from dragnet.sample import cached_sample

    couch, db = live_db
    _fill(couch, db, 300)
    spec = f"{live_url}/{db}"
    path, drawn = cached_sample(spec, count=50, fraction=None, seed=1, cache_dir=tmp_path)
    assert drawn is not None and drawn.sampled == 50 and path.is_file()
    assert sum(1 for _ in gzip.open(path, "rt")) == 50
    again, drawn2 = cached_sample(spec, count=50, fraction=None, seed=1, cache_dir=tmp_path)
    assert again == path and drawn2 is None
