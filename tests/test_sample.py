"""dragnet sample: the hash draw spreads over the whole id space; copying to a file and to a database."""

from __future__ import annotations

import gzip
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from loopback import Loopback

from dragnet.couchdb.client import connect, db_path
from dragnet.errors import UsageError
from dragnet.data.sample import (SizeDistribution, bottom_k_threshold, draw_sample, score, selected, split_db_url, strip_doc)

IDS = [f"doc{i:06d}" for i in range(20_000)]


def test_fraction_draw_spreads_over_every_part_of_the_id_space():
    picked = [i for i, d in enumerate(IDS) if selected(d, 7, 0.05, inclusive=False)]
    assert 800 < len(picked) < 1200  # 1,000 expected; binomial σ ≈ 31
    # each tenth of the sorted ids holds about a tenth of the sample (not the first N ids)
    tenths = [sum(1 for i in picked if k * 2000 <= i < (k + 1) * 2000) for k in range(10)]
    assert min(tenths) > 60 and max(tenths) < 140, tenths
    assert picked[-1] > 19_000


def _drawn(ids, count, seed):
    threshold, _ = bottom_k_threshold(iter(ids), count, seed)
    return [d for d in ids if selected(d, seed, threshold, inclusive=True)]


def test_count_draw_is_exact_deterministic_and_spread():
    threshold, seen = bottom_k_threshold(iter(IDS), 500, seed=3)
    assert seen == len(IDS)
    picked = _drawn(IDS, 500, 3)
    assert len(picked) == 500
    assert picked == _drawn(list(reversed(IDS)), 500, 3)[::-1]  # the order ids come in does not matter
    tenths = [sum(1 for d in picked if f"doc{k * 2000:06d}" <= d < f"doc{(k + 1) * 2000:06d}") for k in range(10)]
    assert min(tenths) > 25 and max(tenths) < 80, tenths  # 50 expected in each tenth, not 500 in the first
    other = _drawn(IDS, 500, 4)
    assert len(set(other) & set(picked)) < 60  # another seed, another sample (12.5 in common expected)


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


def test_size_distribution_exact_below_1k():
    d = SizeDistribution()
    for n in (10, 20, 30, 40, 1000):
        d.add(n)
    assert d.as_dict() == {"docs": 5, "bytes": 1100, "mean": 220.0, "p50": 30, "p90": 1000, "p99": 1000,
                           "max": 1000}
    assert d.percentile(20) == 10 and d.percentile(21) == 20 and d.percentile(0) == 10


def test_size_distribution_percentiles_within_one_percent_in_bounded_memory():
    import math
    import random

    rng = random.Random(5)
    sizes = [int(rng.lognormvariate(7.5, 1.2)) + 50 for _ in range(50_000)]
    d = SizeDistribution()
    for n in sizes:
        d.add(n)
    ordered = sorted(sizes)
    for p in (50, 90, 99, 99.9):
        exact = ordered[max(1, math.ceil(len(sizes) * p / 100)) - 1]  # nearest rank
        assert abs(d.percentile(p) - exact) <= 0.01 * exact, (p, d.percentile(p), exact)
    assert d.bytes == sum(sizes) and d.max == max(sizes) and d.min == min(sizes) and d.docs == len(sizes)
    assert len(d.buckets) < 2_000  # however many documents
    for _ in range(50_000):
        d.add(rng.randrange(1, 10_000_000))
    assert len(d.buckets) < 2_500


def test_split_db_url():
    assert split_db_url("http://u:p@h:5984/a%2Fb") == ("http://u:p@h:5984", "a/b")
    assert split_db_url("http://h:5984/x/db/") == ("http://h:5984/x", "db")
    with pytest.raises(UsageError) as exc:
        split_db_url("http://u:secret@h:5984")
    assert "secret" not in str(exc.value) and "***" in str(exc.value)


def _loopback_couch(docs: dict[str, dict]) -> Loopback:
    """A loopback server answering GET /db and GET /db/_all_docs (limit, startkey, skip, include_docs)."""
    keys = sorted(docs)

    def handler(method, path, body):
        u = urlsplit(path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path == "/src":
            return 200, {}, {"doc_count": len(docs)}
        start = json.loads(q["startkey"]) if "startkey" in q else ""
        rest = [k for k in keys if k >= start][int(q.get("skip", 0)):][:int(q["limit"])]
        return 200, {}, {"rows": [dict({"id": k, "key": k, "value": {"rev": docs[k]["_rev"]}},
                                       **({"doc": docs[k]} if q.get("include_docs") == "true" else {}))
                                  for k in rest]}

    return Loopback(handler=handler, query=True)


def test_sample_to_file_over_loopback_pages_the_whole_database(tmp_path):
    docs = {d: {"_id": d, "_rev": "1-a", "n": i, "pad": "x" * (i % 50)} for i, d in enumerate(IDS[:3000])}
    docs["_design/app"] = {"_id": "_design/app", "_rev": "1-d", "views": {}}
    docs["doc000007"]["_attachments"] = {"a.txt": {"stub": True}}
    with _loopback_couch(docs) as lb:
        out = tmp_path / "s.jsonl.gz"
        s = draw_sample(connect(lb.url), "src", count=300, seed=1, to_file=out, page_size=250, batch_size=64)
    got = [json.loads(line) for line in gzip.open(out, "rt")]
    assert len(got) == s.sampled == s.written == 300
    assert s.source_docs == 3000 and s.design_docs_skipped == 1
    assert all("_rev" not in d and "_attachments" not in d and not d["_id"].startswith("_design/") for d in got)
    ns = sorted(d["n"] for d in got)
    assert ns[0] < 100 and ns[-1] > 2900  # from the start to the end of the id space, across 12 pages
    assert s.source_sizes.as_dict()["docs"] == 3000 and s.sample_sizes.as_dict()["docs"] == 300
    # sizes are of the documents as stored (_rev included, attachments not), whatever the target
    stored = {k: {f: v for f, v in d.items() if f != "_attachments"} for k, d in docs.items()}
    assert s.sample_sizes.bytes == sum(len(json.dumps(stored[d["_id"]], separators=(",", ":"))) for d in got)
    assert s.source_sizes.bytes == sum(len(json.dumps(d, separators=(",", ":")))
                                       for k, d in stored.items() if not k.startswith("_design/"))
    assert s.attachments_dropped == s.docs_with_attachments == (1 if "doc000007" in {d["_id"] for d in got} else 0)


def test_cli_json_masks_credentials_and_draws_the_same_sample_again(tmp_path):
    from click.testing import CliRunner

    from dragnet.cli import main

    docs = {d: {"_id": d, "_rev": "1-a", "n": i} for i, d in enumerate(IDS[:1500])}
    with _loopback_couch(docs) as lb:
        src = lb.url.replace("http://", "http://admin:s3cr3t@") + "/src"
        runs = [CliRunner().invoke(main, ["sample", "--from", src, "--fraction", "0.1", "--seed", "9",
                                          "--to", str(tmp_path / f"{k}.jsonl.gz"), "--json"]) for k in "ab"]
        human = CliRunner().invoke(main, ["sample", "--from", src, "--count", "20", "--to", str(tmp_path / "c.jsonl.gz")])
    for r in runs + [human]:
        assert r.exit_code == 0, r.output
        assert "s3cr3t" not in r.output
    out = json.loads(runs[0].output)
    assert out["source"] == lb.url.replace("http://", "http://admin:***@") + "/src"
    assert out["source_docs"] == 1500 and 100 < out["sampled"] < 200 and out["sizes"]["sample"]["docs"] == out["sampled"]
    assert "sha1(seed:_id)" in out["method"] and "whole id space" in out["method"]
    assert gzip.open(tmp_path / "a.jsonl.gz").read() == gzip.open(tmp_path / "b.jsonl.gz").read()  # same seed
    assert "sampled 20 of 1,500 documents: the 20 documents with the lowest sha1(seed:_id)" in human.output
    assert "source" in human.output and "p99" in human.output
    assert not list(tmp_path.glob("*.partial"))


@pytest.mark.parametrize("args, message", [
    (["--from", "http://h:1/db", "--to", "x.jsonl.gz"], "give --count N or --fraction F"),
    (["--from", "http://h:1/db", "--to", "x.jsonl.gz", "--count", "3", "--fraction", "0.5"],
     "give --count N or --fraction F"),
    (["--from", "db", "--to", "x.jsonl.gz", "--count", "3"], "expected URL/db"),
    (["--from", "http://u:pw9@h:1", "--to", "x.jsonl.gz", "--count", "3"], "not a database URL"),
    (["--from", "http://h:1/db", "--to", "x.json", "--count", "3"], "expected URL/db or FILE.jsonl.gz"),
])
def test_cli_bad_input_is_one_line_error(args, message):
    from click.testing import CliRunner

    from dragnet.cli import main

    r = CliRunner().invoke(main, ["sample"] + args)
    assert r.exit_code != 0
    assert message in r.output and "pw9" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_unreachable_source_is_an_error_and_leaves_no_file(tmp_path):
    from click.testing import CliRunner

    from conftest import free_port
    from dragnet.cli import main

    r = CliRunner().invoke(main, ["sample", "--from", f"http://127.0.0.1:{free_port()}/db", "--count", "3",
                                  "--to", str(tmp_path / "x.jsonl.gz")])
    assert r.exit_code == 1 and "cannot reach CouchDB" in r.output and len(r.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


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
        # every document: the deleted one and the design doc are not copied, the attachment is dropped
        whole = draw_sample(couch, db, fraction=1.0, seed=2, to_file=tmp_path / "all.jsonl.gz", page_size=300)
        every = [json.loads(x) for x in gzip.open(tmp_path / "all.jsonl.gz", "rt")]
        assert whole.source_docs == whole.sampled == len(every) == 2001  # d00000..d01999 and with_att
        assert {d["_id"] for d in every} == {f"d{i:05d}" for i in range(2000)} | {"with_att"}
        assert whole.design_docs_skipped == 1
        assert whole.attachments_dropped == whole.docs_with_attachments == 1
        assert all("_attachments" not in d and "_rev" not in d for d in every)

        s = draw_sample(couch, db, fraction=0.5, seed=2, to_file=tmp_path / "s.jsonl.gz", page_size=300)
        lines = [json.loads(x) for x in gzip.open(tmp_path / "s.jsonl.gz", "rt")]
        assert len(lines) == s.sampled and 850 < s.sampled < 1150
        ns = sorted(d["n"] for d in lines if "n" in d)
        assert ns[0] < 50 and ns[-1] > 1950

        first = draw_sample(couch, db, count=400, seed=2, to_db=target, batch_size=150)
        assert first.sampled == first.written == 400 and first.already_present == 0
        assert couch.get(db_path(target))["doc_count"] == 400
        rows = couch.get(f"{db_path(target)}/_all_docs", params={"include_docs": "true"})["rows"]
        for row in rows[:20]:
            assert row["doc"]["_rev"] == couch.get(f"{db_path(db)}/{row['id']}")["_rev"]  # _rev kept
        assert all("_attachments" not in r["doc"] for r in rows)
        again = draw_sample(couch, db, count=400, seed=2, to_db=target, batch_size=150)
        assert again.written == 0 and again.already_present == 400  # a re-run resumes: nothing re-sent
        # an interrupted copy (stopped after its first page): the re-run sends exactly what is missing
        class Stop(Exception):
            pass

        def stop(p):
            if p.phase == "copy":
                raise Stop

        with pytest.raises(Stop):
            draw_sample(couch, db, count=400, seed=2, to_db=target + "2", page_size=1000, batch_size=50,
                        progress=stop)
        partial = couch.get(db_path(target + "2"))["doc_count"]
        assert 100 < partial < 300  # the first 1,000 of 2,002 ids hold about half the sample
        resumed = draw_sample(couch, db, count=400, seed=2, to_db=target + "2", batch_size=50)
        assert resumed.written == 400 - partial and resumed.already_present == partial
        assert couch.get(db_path(target + "2"))["doc_count"] == 400
        # sizes: the source's total is the sum over every live non-design doc as stored
        stored = couch.get(f"{db_path(db)}/_all_docs", params={"include_docs": "true"})["rows"]
        expected = [len(json.dumps({k: v for k, v in r["doc"].items() if k != "_attachments"},
                                   separators=(",", ":"), ensure_ascii=False).encode())
                    for r in stored if not r["id"].startswith("_design/")]
        assert first.source_sizes.bytes == sum(expected) and first.source_sizes.max == max(expected)
    finally:
        for name in (target, target + "2"):
            couch.request("DELETE", db_path(name), ok=(200, 202, 404))


@pytest.mark.live
def test_live_cli_sample_then_bench_design_doc(live_url, tmp_path):
    """The whole flow: a database of declarations -> `dragnet sample --to URL/db` -> `dragnet bench --ddoc`."""
    from click.testing import CliRunner
    from conftest import normalised_declarations

    from dragnet.data import importer as importer
    from dragnet.cli import main

    couch = connect(live_url)
    src, dst = f"dragnet_test_sample_src_{tmp_path.name[-8:]}".lower(), f"dragnet_test_sample_dst_{tmp_path.name[-8:]}".lower()
    docs = normalised_declarations(300, 17)
    importer.import_documents(couch, src, ((f"gen:{i}", json.dumps(d)) for i, d in enumerate(docs)),
                              importer.ImportOptions())
    password = live_url.split("@")[0].rsplit(":", 1)[-1] if "@" in live_url else None
    try:
        args = ["sample", "--from", f"{live_url}/{src}", "--to", f"{live_url}/{dst}", "--count", "120"]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        assert "sampled 120 of 300 documents" in r.output and "written 120" in r.output
        assert password is None or password not in r.output
        again = CliRunner().invoke(main, args + ["--json"])
        out = json.loads(again.output)
        assert out["written"] == 0 and out["already_present"] == 120
        assert couch.get(db_path(dst))["doc_count"] == 120

        r = CliRunner().invoke(main, ["bench", "--url", live_url, "--db", dst, "--ddoc", "tests/ddocs/app",
                                      "--languages", "javascript,javascript_quickjs,chakra", "--repeat", "1",
                                      "--no-baseline", "--no-ceiling", "--results", str(tmp_path / "b")])
        manifest = json.loads((tmp_path / "b" / "bench.json").read_text())
        missing = [x for x in manifest["runs"] if "unknown_query_server" in (x.get("error") or "")]
        if missing:
            pytest.skip(f"this CouchDB lacks a query server: {missing[0]['error']}")
        assert r.exit_code == 0, r.output
        runs = {x["language"]: x for x in manifest["runs"]}
        assert set(runs) == {"javascript", "javascript_quickjs", "chakra"}
        assert all(x["status"] == "ok" for x in runs.values()), manifest["runs"]
        assert runs["chakra"]["comparison"]["differences"] == 0
    finally:
        for name in (src, dst):
            couch.request("DELETE", db_path(name), ok=(200, 202, 404))


def test_cache_path_is_keyed_without_credentials(tmp_path):
    from dragnet.data.sample import cache_path

    a = cache_path("http://admin:pw1@h:5984/big", count=100, fraction=None, seed=1, cache_dir=tmp_path)
    b = cache_path("http://other:pw2@h:5984/big", count=100, fraction=None, seed=1, cache_dir=tmp_path)
    assert a == b and "pw" not in str(a) and a.parent == tmp_path
    assert cache_path("http://h:5984/big", count=100, fraction=None, seed=2, cache_dir=tmp_path) != a
    assert cache_path("http://h:5984/big", count=None, fraction=0.1, seed=1, cache_dir=tmp_path) != a
    assert cache_path("http://h:5985/big", count=100, fraction=None, seed=1, cache_dir=tmp_path) != a
    assert cache_path("http://h:5984/other", count=100, fraction=None, seed=1, cache_dir=tmp_path) != a


@pytest.mark.live
def test_live_qsbench_docs_from_db_is_cached(live_db, live_url, tmp_path):
    from dragnet.data.sample import cached_sample

    couch, db = live_db
    _fill(couch, db, 300)
    spec = f"{live_url}/{db}"
    path, drawn = cached_sample(spec, count=50, fraction=None, seed=1, cache_dir=tmp_path)
    assert drawn is not None and drawn.sampled == 50 and path.is_file()
    assert sum(1 for _ in gzip.open(path, "rt")) == 50
    again, drawn2 = cached_sample(spec, count=50, fraction=None, seed=1, cache_dir=tmp_path)
    assert again == path and drawn2 is None


@pytest.mark.live
def test_live_qsbench_cli_reads_a_database_sample(live_db, live_url, tmp_path):
    from click.testing import CliRunner
    from conftest import normalised_declarations

    from dragnet.data import importer as importer
    from dragnet.cli import main

    couch, db = live_db
    docs = normalised_declarations(150, 3)
    importer.import_documents(couch, db, ((f"gen:{i}", json.dumps(d)) for i, d in enumerate(docs)),
                              importer.ImportOptions())
    args = ["qsbench", "--docs", f"{live_url}/{db}", "--count", "40", "--servers", "node", "--repeat", "1",
            "--warmup", "0", "--cache", str(tmp_path / "cache"), "--results", str(tmp_path / "r"), "--json"]
    r = CliRunner().invoke(main, args)
    if r.exit_code != 0 and "no query server" in r.output:
        pytest.skip("node query server not available")
    assert r.exit_code == 0, r.output
    cached = list((tmp_path / "cache").glob("sample-*.jsonl.gz"))
    assert len(cached) == 1 and sum(1 for _ in gzip.open(cached[0], "rt")) == 40
    mtime = cached[0].stat().st_mtime_ns
    password = live_url.split("@")[0].rsplit(":", 1)[-1] if "@" in live_url else None
    assert password is None or password not in r.output
    r2 = CliRunner().invoke(main, args)
    assert r2.exit_code == 0, r2.output
    assert cached[0].stat().st_mtime_ns == mtime  # read from the cache, not drawn again
    results = [json.loads(p.read_text()) for p in (tmp_path / "r").rglob("*.json")]
    assert results and (password is None or password not in json.dumps(results))
