"""Every language dragnet measures, built for real inside CouchDB on one small database.

Each language's view file indexes every document, and its rows (ids, keys, values) equal what the
Python function emits in-process, so all of them equal each other. Needs DRAGNET_TEST_COUCHDB_URL; a
language the server has no query server for (a CouchDB not started by `dragnet couch up`) skips with
CouchDB's answer.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import generated_db

from dragnet.index import addview as addview
from dragnet.index import ddoc as ddoc
from dragnet.qsbench import run as qsbench
from dragnet.index import views as views
from dragnet.servers.registry import LANGUAGES

REPO = Path(__file__).resolve().parent.parent
INCOME = REPO / "views" / "income"
N_DOCS = 300

# language -> the view file it runs (the same function in each dialect): every language of the registry
CASES = {lang.name: lang.view_file for lang in LANGUAGES if lang.reads_docs}   # the ceiling emits no real rows


@pytest.fixture(scope="module")
def small_db(live_url):
    with generated_db(live_url, "dragnet_test_langs", N_DOCS, 23) as (couch, name, docs):
        namespace: dict = {}
        exec(views.load(INCOME / "map.py").source, namespace)
        expected = {d["_id"]: (k, v) for d in docs for k, v in (namespace["fun"](d) or [])}
        yield couch, name, expected


@pytest.mark.live
@pytest.mark.parametrize("language", list(CASES))
def test_live_every_language_indexes_every_document_with_equal_rows(small_db, language, tmp_path):
    couch, db, expected = small_db
    # named, so the benchmark keeps it for the rows to be read
    cfg = addview.Config(view_path=str(INCOME / CASES[language]), language=language, db=db, timeout=180,
                         ddoc=ddoc.unique_name(language, "income"), results_dir=str(tmp_path / "results"),
                         argv=["dragnet", "addview"])
    try:
        out = addview.run_benchmark(couch, cfg)
    except addview.BuildFailed as e:
        if "unknown_query_server" in str(e) or "unknown language" in str(e).lower():
            pytest.skip(f"this CouchDB has no {language} query server: {e}")
        raise
    s = out.results["summary"]
    assert s["ok"] is True and s["error"] is None
    assert s["docs"] >= N_DOCS and s["rows"] == len(expected)
    path = ddoc.ddoc_path(db, out.results["view"]["ddoc"])
    info = couch.get(f"{path}/_info")
    assert info["view_index"]["language"] == language
    assert info["view_index"]["updates_pending"]["total"] == 0

    rows = couch.get(f"{path}/_view/{out.results['view']['view']}", params={"stale": "ok"})["rows"]
    got = {r["id"]: (r["key"], r["value"]) for r in rows}
    assert got.keys() == expected.keys()
    differing = [i for i in expected if not qsbench.values_equal(list(got[i]), list(expected[i]))]
    assert differing == [], f"{language} rows differ from the reference, e.g. {got[differing[0]]} != " \
                            f"{expected[differing[0]]}"
    couch.request("DELETE", f"{path}?rev={couch.get(path)['_rev']}", ok=(200,))


def _view_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name / ("map.py" if "python" in text.splitlines()[0] else "map.js")
    path.parent.mkdir()
    path.write_text(text)
    return str(path)


@pytest.mark.live
def test_live_throwing_function_completes_without_the_failing_docs(small_db, tmp_path):
    couch, db, expected = small_db
    # throws on about half the documents: CouchDB logs each and indexes the rest
    src = ("// dragnet: language=javascript\nfunction (doc) {\n"
           "  if (parseInt(doc._id.charAt(5), 16) < 8) { throw new Error('boom ' + doc._id); }\n"
           "  emit(doc._id, 1);\n}\n")
    cfg = addview.Config(view_path=_view_file(tmp_path, "throws", src), db=db, timeout=120,
                         ddoc=ddoc.unique_name("javascript", "throws"), results_dir=str(tmp_path / "results"),
                         argv=["dragnet", "addview"])
    out = addview.run_benchmark(couch, cfg)
    s = out.results["summary"]
    assert s["ok"] is True
    path = ddoc.ddoc_path(db, out.results["view"]["ddoc"])
    rows = couch.get(f"{path}/_view/throws", params={"stale": "ok"})["rows"]
    couch.request("DELETE", f"{path}?rev={couch.get(path)['_rev']}", ok=(200,))
    kept = {r["id"] for r in rows}
    assert kept and all(int(i[5], 16) >= 8 for i in kept)
    assert 0 < len(kept) < N_DOCS and s["rows"] == len(kept)
    # counted from CouchDB's log where dragnet can read it (a CouchDB it started), else not claimed
    if addview.find_log(couch, None) is not None:
        assert s["exceptions_logged"] == N_DOCS - len(kept)
    else:
        assert s["exceptions_logged"] is None


@pytest.mark.live
def test_live_crashing_query_server_fails_the_build_fast(small_db, tmp_path):
    couch, db, _ = small_db
    src = "# dragnet: language=python3\ndef fun(doc):\n    import os\n    os._exit(3)\n"
    cfg = addview.Config(view_path=_view_file(tmp_path, "crash", src), db=db, timeout=120,
                         results_dir=str(tmp_path / "results"), argv=["dragnet", "addview"])
    t0 = time.time()
    try:
        with pytest.raises(addview.BuildFailed) as info:
            addview.run_benchmark(couch, cfg)
    except BaseException as e:   # a CouchDB without dragnet's python3 server
        if "unknown_query_server" in str(e):
            pytest.skip(f"this CouchDB has no python3 query server: {e}")
        raise
    assert "os_process" in str(info.value) or "exit" in str(info.value)
    assert time.time() - t0 < 60
    saved = json.loads(next((tmp_path / "results").glob("*.json")).read_text())
    assert saved["summary"]["ok"] is False and saved["view"]["deleted_after_failure"] is True


@pytest.mark.live
def test_live_a_benchmark_deletes_its_fresh_design_doc_once_measured(small_db, tmp_path):
    couch, db, expected = small_db
    cfg = addview.Config(view_path=str(INCOME / "map.js"), db=db, timeout=120, pidstat=False,
                         results_dir=str(tmp_path / "results"), argv=["dragnet", "addview"])
    out = addview.run_benchmark(couch, cfg)
    assert out.results["summary"]["ok"] is True and out.results["summary"]["rows"] == len(expected)
    assert out.results["view"]["deleted_after_benchmark"] is True
    ident = out.results["view"]["ddoc"]
    ddocs = couch.get(f"/{db}/_all_docs", params={"startkey": '"_design/"', "endkey": '"_design0"'})["rows"]
    assert ident not in [r["id"] for r in ddocs]
    saved = json.loads(Path(out.path).read_text())
    assert saved["view"]["deleted_after_benchmark"] is True
