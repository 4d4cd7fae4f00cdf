"""addview and couch up as library calls: bad options are one-line UsageErrors before anything connects or
starts (the URL and port below answer nothing), and each mode's outcome is what the renderers read."""

from __future__ import annotations

import pytest

from dragnet.runner import addview as session
from dragnet.couchdb import up as couch_up
from dragnet.errors import UsageError

DEAD = "http://127.0.0.1:9"    # discard port: a connection would fail with another error


@pytest.mark.parametrize("fields, message", [
    ({}, "give a VIEW_PATH, or a whole design document with --ddoc SOURCE"),
    ({"view_path": "map.js", "update": 5}, "--update goes with --benchmark"),
    ({"view_path": "map.js", "compact": True}, "--compact goes with --benchmark"),
    ({"view_path": "map.js", "queries": ("x",)}, "--query goes with --nouveau"),
    ({"view_path": "map.js", "mango_source": "x.json", "benchmark": True}, "--mango goes with --benchmark"),
    ({"view_path": "map.js", "load_text": "writes=1/s"}, "--load goes with --benchmark"),
    ({"nouveau_source": "x.js"}, "--nouveau goes with --benchmark"),
])
def test_addview_request_is_checked_before_anything_runs(fields, message):
    events = []
    with pytest.raises(UsageError, match="^" + message.replace("-", r"\-")):
        session.addview(session.AddviewRequest(url=DEAD, db="x", **fields), lambda k, d: events.append(k))
    assert events == []


@pytest.mark.parametrize("fields, message", [
    ({"backend": "local", "image": "x"}, "--image applies to --backend docker only"),
    ({"couchdb_home": "/x", "home_given": True}, "--couchdb-home applies to --backend local only"),
    ({"nouveau_heap": "1g"}, "--nouveau-heap needs --nouveau"),
    ({"nouveau": True, "nodes": 2}, r"--nouveau runs beside one CouchDB \(--nodes 1\)"),
    ({"nodes": 2, "data_dir": "/tmp/x"}, "--data-dir names one directory"),
])
def test_couch_up_request_is_checked_before_anything_starts(fields, message):
    events = []
    with pytest.raises(UsageError, match=message):
        couch_up.up(couch_up.UpRequest(port=9, **fields), lambda k, d: events.append(k))
    assert events == []


def test_couchdb_home_from_the_environment_does_not_refuse_docker():
    # only a --couchdb-home typed on the command line is refused with docker; the env var's may be set anyway
    with pytest.raises(UsageError, match="needs --nouveau"):
        couch_up.up(couch_up.UpRequest(couchdb_home="/x", home_given=False, nouveau_heap="1g", port=9))
