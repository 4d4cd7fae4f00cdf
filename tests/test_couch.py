
import pytest

from dragnet.couchdb.client import CouchError, CouchUnreachable, connect, db_path, mask_url, release, split_credentials
from dragnet.measure.stats import percentile, summarize
from conftest import free_port, serve_json


def test_split_credentials_strips_userinfo():
    assert split_credentials("http://admin:s3cret@localhost:5984/") == ("http://localhost:5984", "admin", "s3cret")
    assert split_credentials("https://db.example:6984") == ("https://db.example:6984", None, None)


def test_split_credentials_percent_decodes_userinfo():
    assert split_credentials("http://ad%3Amin:p%40ss%2Fw%25d@localhost:5984") == (
        "http://localhost:5984", "ad:min", "p@ss/w%d")
    auth = connect("http://admin:p%40ss@localhost:5984").session.auth
    assert (auth.user, auth.password) == ("admin", "p@ss")


def test_mask_url_hides_password_only():
    assert mask_url("http://admin:s3cret@localhost:5984/x") == "http://admin:***@localhost:5984/x"
    assert mask_url("http://localhost:5984") == "http://localhost:5984"


def test_connect_prefers_url_then_env():
    c = connect("http://u:p@h:1", env={"COUCHDB_USER": "e", "COUCHDB_PASSWORD": "ep"})
    assert (c.session.auth.user, c.session.auth.password) == ("u", "p") and c.url == "http://h:1"
    c = connect("http://h:1", env={"COUCHDB_USER": "e", "COUCHDB_PASSWORD": "ep"})
    assert (c.session.auth.user, c.session.auth.password) == ("e", "ep")
    assert "ep" not in repr(c) and "ep" not in repr(c.session.auth)


def test_release_reads_a_version_as_get_root_gives_it():
    assert release("3.5.2") == (3, 5, 2)
    assert release("3.5.0-6525b6b") == (3, 5, 0)
    assert release("3.5") == (3, 5, 0)
    assert release("3.10.1") > release("3.5.2")          # compared as numbers, not text
    for bad in (None, "", "main", "3", "3.x.1", "v3.5.2"):
        assert release(bad) is None


def test_db_path_escapes_slashes():
    assert db_path("a/b+c") == "/a%2Fb%2Bc"


def test_bad_url_is_a_clear_error_without_secret():
    with pytest.raises(Exception) as err:
        connect("admin:s3cret@localhost:5984")      # no scheme: not a URL, and the password stays out
    assert "not a CouchDB URL" in str(err.value)
    assert "s3cret" not in str(err.value)




def test_unreachable_server_message_has_no_secret():
    port = free_port()
    couch = connect(f"http://admin:topsecret@127.0.0.1:{port}", timeout=2)
    with pytest.raises(CouchUnreachable) as err:
        couch.get("/")
    assert "connection refused" in str(err.value)
    assert "topsecret" not in str(err.value)


def test_error_status_becomes_one_line_couch_error():
    srv, _ = serve_json([(404, {"error": "not_found", "reason": "Database does not exist."})])
    try:
        couch = connect(f"http://127.0.0.1:{srv.server_port}")
        with pytest.raises(CouchError) as err:
            couch.get("/nope")
        assert err.value.status == 404
        assert str(err.value) == "CouchDB answered 404 to GET /nope: not_found: Database does not exist."
    finally:
        srv.shutdown()


def test_percentile_matches_linear_interpolation():
    vals = [15, 20, 35, 40, 50]
    assert percentile(vals, 0) == 15 and percentile(vals, 100) == 50
    assert percentile(vals, 50) == 35
    assert percentile(vals, 40) == pytest.approx(29.0)  # rank 1.6 -> 20 + 0.6 * 15


def test_summary_mean_stdev():
    s = summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert s.mean == 5 and s.median == 4.5 and s.min == 2 and s.max == 9
    assert s.stdev == pytest.approx(2.13808993, rel=1e-6)
    assert s.format("c/s") == "5.0 ± 2.1 c/s  [min 2.0 … max 9.0]"


def test_a_dropped_connection_is_tried_once_more_for_a_get_only():
    from loopback import Loopback

    ok = (200, {}, {"couchdb": "Welcome"})
    with Loopback({("GET", "/"): ["drop", ok], ("POST", "/db/_bulk_docs"): ["drop", (201, {}, [])]}) as lb:
        couch = connect(lb.url)
        assert couch.get("/")["couchdb"] == "Welcome"
        assert len(lb.requests("GET", "/")) == 2
        with pytest.raises(CouchUnreachable, match="connection closed"):
            couch.request("POST", "/db/_bulk_docs", json={"docs": []})
        assert len(lb.requests("POST", "/db/_bulk_docs")) == 1      # not repeated: it may have been applied


def test_versions_are_not_asked_of_a_node_named_nonode():
    # CouchDB 3.5 in a container without NODENAME: each GET _versions crashed its ioq server, and the sixth
    # in a row took the node down (found by the image test building every language)
    from loopback import Loopback

    script = {("GET", "/"): [(200, {}, {"couchdb": "Welcome", "version": "3.5.0"})],
              ("GET", "/_membership"): [(200, {}, {"all_nodes": ["nonode@nohost"],
                                                   "cluster_nodes": ["nonode@nohost"]})],
              ("GET", "/_node/_local/_versions"): [(200, {}, {"javascript_engine": {"name": "spidermonkey"}})]}
    with Loopback(script) as lb:
        info = connect(lb.url).version()
        assert info["version"] == "3.5.0" and info["node_versions"] is None
        assert lb.requests("GET", "/_node/_local/_versions") == []
    script[("GET", "/_membership")] = [(200, {}, {"all_nodes": ["couchdb@127.0.0.1"]})]
    with Loopback(script) as lb:
        assert connect(lb.url).version()["node_versions"]["javascript_engine"]["name"] == "spidermonkey"
