"""Whether the Erlang baseline can run on the bench's CouchDB (talks to it over HTTP).

The baseline's map function is Erlang, run by CouchDB's native query server, which is on only when an ini
file says `[native_query_servers] enable_erlang_query_server = true` (CouchDB refuses that section over
HTTP). Every CouchDB dragnet starts has it on: the local backend writes it into its ini, the docker backend
binds a default.d file into the container (dragnet.couchdb.docker.ERLANG_INI). On a CouchDB given by URL
that has it off the baseline is left out, said in one line before the first build, and the rest runs.
"""

from __future__ import annotations

from dragnet.couchdb.client import Couch, CouchError, connect, mask_url
from dragnet.errors import UsageError
from dragnet.results.load import BASELINE_LABEL

PATH = "/_node/_local/_config/native_query_servers/enable_erlang_query_server"


def native_server_on(couch: Couch) -> bool | None:
    """The node's setting (CouchDB's default, unset, is off); None when it cannot be read."""
    try:
        value = couch.get(PATH)
    except CouchError as exc:
        return False if exc.status == 404 else None
    return str(value).strip().lower() == "true"


def check(couch: Couch, url: str, inst) -> dict:
    """What the manifest records as `erlang_baseline`: {"available": bool, "native_server": "on"/"off"/None,
    "by": who turned it on, "why": the one-line reason when unavailable}."""
    on = native_server_on(couch)
    if on is None:        # not readable (not an admin?): the builds will tell
        return {"available": True, "native_server": None}
    if on:
        by = ("the CouchDB's own settings" if inst is None else
              "dragnet (a default.d ini bound into the container)" if inst.backend == "docker" else
              "dragnet (the ini it writes)")
        return {"available": True, "native_server": "on", "by": by}
    if inst is None:
        why = (f"erlang_baseline is unavailable on {mask_url(url)}: its native Erlang query server is off "
               "([native_query_servers] enable_erlang_query_server, which CouchDB takes only from an ini file, "
               "and dragnet did not start this CouchDB); the other languages run without it")
    else:
        why = (f"erlang_baseline is unavailable on the CouchDB dragnet manages on port {inst.port}: its native "
               f"Erlang query server is off (started by an earlier dragnet, or on a remote Docker engine); "
               f"`dragnet couch down --port {inst.port}` and `couch up` again turn it on")
    return {"available": False, "native_server": "off", "why": why}


def languages(langs: list[str], baseline: bool, url: str, inst, env: dict | None = None) -> tuple[list[str], dict]:
    """The languages to plan (the baseline left out where it cannot run) and what the manifest records;
    a one-line UsageError when the baseline was all there was to run."""
    if not (baseline or BASELINE_LABEL in langs):
        return langs, {}
    erlang = check(connect(url, env=env), url, inst)
    if erlang["available"]:
        return langs, erlang
    rest = [lang for lang in langs if lang != BASELINE_LABEL]
    if not rest:
        raise UsageError(erlang["why"].split("; the other")[0] + "; no other language to run")
    return rest, erlang
