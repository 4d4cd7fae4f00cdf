"""Design documents: build one for a view file, create it fresh, or update it keeping its other views."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from urllib.parse import quote

from dragnet.couchdb.client import Couch, CouchError, db_path
from dragnet.errors import DragnetError, UsageError
from dragnet.index.views import ViewFile

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def ddoc_id(name: str) -> str:
    """'income' or '_design/income' -> '_design/income'; names are checked (they end up in URLs)."""
    bare = name[len("_design/"):] if name.startswith("_design/") else name
    if not _NAME.match(bare):
        raise UsageError(f"bad design document name {name!r} (letters, digits, _ . - only)")
    return f"_design/{bare}"


def ddoc_path(db: str, ddoc: str) -> str:
    return f"{db_path(db)}/_design/{quote(ddoc_id(ddoc)[len('_design/'):], safe='')}"


def unique_name(language: str, view: str) -> str:
    """A design document name never used before: dragnet_<view>_<language>_<ms>_<random>."""
    lang = re.sub(r"[^A-Za-z0-9_]", "_", language)
    return f"dragnet_{view}_{lang}_{int(time.time() * 1000)}_{secrets.token_hex(2)}"


def view_def(view: ViewFile, reduce: str | None = None) -> dict:
    d = {"map": view.source}
    if reduce:
        d["reduce"] = reduce
    return d


def build(ddoc: str, view_name: str, view: ViewFile, *, reduce: str | None = None,
          autoupdate: bool | None = None, nonce: str | None = None) -> dict:
    """A design document holding one view.

    autoupdate=False stops CouchDB's background indexer (ken) from building it on its own; CouchDB reads
    the top-level "autoupdate" field (as in the recordings' ddoc.json).
    nonce goes into "options": CouchDB shares one index between design docs whose views, language and
    options are equal (the index signature), so a benchmark of an already-indexed function would measure
    nothing; a unique option makes the index new without touching the function.
    """
    doc = {"_id": ddoc_id(ddoc), "language": view.language, "views": {view_name: view_def(view, reduce)}}
    if autoupdate is not None:
        doc["autoupdate"] = autoupdate
    if nonce is not None:
        doc["options"] = {"dragnet_benchmark": nonce}
    return doc


@dataclass
class Saved:
    ddoc: str
    rev: str
    created: bool
    views: list[str]


def get(couch: Couch, db: str, ddoc: str) -> dict | None:
    resp = couch.request("GET", ddoc_path(db, ddoc), ok=(200, 404))
    return resp.json() if resp.status_code == 200 else None


def save_error(exc: CouchError, db: str, ddoc: str) -> DragnetError:
    """CouchDB's answer to a design-doc PUT, as one line (compilation errors say so)."""
    if exc.status == 404 and exc.error == "not_found":
        return DragnetError(f"database {db!r} does not exist ({exc.reason or 'not found'})")
    if exc.error == "compilation_error":
        reason = " ".join(exc.reason.split())
        return DragnetError(f"CouchDB could not compile the view in {ddoc} ({exc.status} compilation_error): "
                            f"{reason[:400]}")
    return exc


def create_fresh(couch: Couch, db: str, doc: dict) -> Saved:
    """PUT a new design document; refuse one that exists (a benchmark needs a never-indexed index)."""
    if get(couch, db, doc["_id"]) is not None:
        raise UsageError(f"design document {doc['_id']} already exists in {db!r}; a benchmark needs a fresh one "
                         f"(leave out --ddoc for a unique name)")
    try:
        rev = couch.put(ddoc_path(db, doc["_id"]), doc)["rev"]
    except CouchError as exc:
        if exc.status == 409:
            raise UsageError(f"design document {doc['_id']} already exists in {db!r}; a benchmark needs a fresh "
                             f"one") from None
        raise save_error(exc, db, doc["_id"]) from None
    return Saved(ddoc=doc["_id"], rev=rev, created=True, views=sorted(doc.get("views", {})))


def create_or_update(couch: Couch, db: str, ddoc: str, view_name: str, view: ViewFile, *,
                     reduce: str | None = None, retries: int = 3) -> Saved:
    """Put the view into the design document, keeping its other views; create the document if missing.

    A design document has one language: adding a view of another language to one with other views is
    refused rather than silently changing how those run.
    """
    ident = ddoc_id(ddoc)
    for _ in range(retries):
        existing = get(couch, db, ident)
        if existing is None:
            doc = build(ident, view_name, view, reduce=reduce)
            created = True
        else:
            doc = dict(existing)
            views = dict(doc.get("views") or {})
            others = sorted(v for v in views if v != view_name)
            lang = doc.get("language", "javascript")
            if others and lang != view.language:
                raise UsageError(f"{ident} holds views {', '.join(others)} in {lang!r}; cannot add a "
                                 f"{view.language!r} view to it (use another --ddoc)")
            views[view_name] = view_def(view, reduce)
            doc["views"], doc["language"] = views, view.language
            created = False
        try:
            rev = couch.put(ddoc_path(db, ident), doc)["rev"]
        except CouchError as exc:
            if exc.status == 409:        # changed under us: read again and retry
                continue
            raise save_error(exc, db, ident) from None
        return Saved(ddoc=ident, rev=rev, created=created, views=sorted(doc["views"]))
    raise DragnetError(f"{ident} kept changing while saving it (409 conflict {retries} times)")
