"""Design documents as benchmark input: load one from a JSON file, a couchapp folder or a live URL.

Every form becomes one normalised `DesignDoc`: the views (map + optional reduce, JavaScript or a
built-in), `views.lib` (what CommonJS `require('views/lib/...')` reads), the `options` that change how
an index is built, and `language`. Everything else of a design doc (shows, lists, validate_doc_update,
_rev, autoupdate) is left out: it does not take part in building the index, and a copy that carried
validate_doc_update would also judge dragnet's own writes.

Couchapp folder layout (as couchapp/erica push it):
    <name>/language                 "javascript" (optional, default javascript)
    <name>/options.json             {"collation": "raw", ...} (optional)
    <name>/views/<view>/map.js      one map function per view folder
    <name>/views/<view>/reduce.js   a function or a built-in name such as _sum (optional)
    <name>/views/lib/**/<mod>.js    -> views.lib.<dirs...>.<mod> (extension dropped)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote, unquote, urlsplit

from .couch import CouchError, connect, db_path, mask_url, split_credentials
from .errors import UsageError

BUILTIN_REDUCES = ("_sum", "_count", "_stats", "_approx_count_distinct")
# options CouchDB reads when building a view index; others are kept but have no effect on it
INDEX_OPTIONS = ("include_design", "local_seq", "collation", "partitioned")
_VIEW_NAME = re.compile(r"^[^\x00-\x1f/]+$")
_MAP_NAMES = ("map.js", "map.erl", "map.py")


@dataclass(frozen=True)
class View:
    name: str
    map: str
    reduce: str | None = None

    @property
    def builtin_reduce(self) -> bool:
        return self.reduce is not None and self.reduce in BUILTIN_REDUCES

    def as_couch(self) -> dict:
        d = {"map": self.map}
        if self.reduce is not None:
            d["reduce"] = self.reduce
        return d


@dataclass(frozen=True)
class DesignDoc:
    """One design document reduced to what builds its index."""

    name: str                                  # bare name, without _design/
    language: str
    views: tuple[View, ...]
    lib: dict | None = None                    # views.lib tree: {name: source | {name: ...}}
    options: dict = field(default_factory=dict)
    source: str = ""                           # where it came from, credentials masked

    @property
    def view_names(self) -> list[str]:
        return [v.name for v in self.views]

    def view(self, name: str) -> View:
        for v in self.views:
            if v.name == name:
                return v
        raise UsageError(f"{self.source or self.name}: no view {name!r} (has {', '.join(self.view_names)})")

    def as_couch(self, ident: str | None = None, *, only: Iterable[str] | None = None) -> dict:
        """The CouchDB JSON body; ident overrides the _id (a benchmark copy), only= keeps some views."""
        keep = None if only is None else set(only)
        views = {v.name: v.as_couch() for v in self.views if keep is None or v.name in keep}
        if self.lib is not None:
            views["lib"] = self.lib
        doc = {"_id": ident or f"_design/{self.name}", "language": self.language, "views": views}
        if self.options:
            doc["options"] = dict(self.options)
        return doc

    def describe(self) -> dict:
        """What a results file records about the design doc (its functions in full)."""
        return {"name": self.name, "source": self.source, "language": self.language,
                "views": {v.name: v.as_couch() for v in self.views}, "lib": self.lib, "options": self.options}


# --------------------------------------------------------------------------- pure normalisation

def _code(text: str) -> str:
    """Trailing whitespace and leading blank lines carry no meaning; files and JSON differ in them."""
    lines = text.rstrip().splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


def _lib(tree: Any, where: str) -> dict:
    if not isinstance(tree, dict):
        raise UsageError(f"{where}: views.lib must be an object of module sources")
    out: dict = {}
    for k, v in sorted(tree.items()):
        if isinstance(v, str):
            out[k] = _code(v)
        elif isinstance(v, dict):
            out[k] = _lib(v, f"{where}.{k}")
        else:
            raise UsageError(f"{where}.{k}: a module must be source text or a folder, not {type(v).__name__}")
    return out


def normalise(doc: Any, *, source: str = "", name: str | None = None) -> DesignDoc:
    """A design document's JSON -> DesignDoc; one-line UsageError saying what and where for bad input."""
    where = source or "design document"
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: a design document must be a JSON object, not {type(doc).__name__}")
    ident = doc.get("_id")
    if name is None:
        if not isinstance(ident, str) or not ident.startswith("_design/") or len(ident) <= len("_design/"):
            raise UsageError(f"{where}: no _id of the form _design/<name>")
        name = ident[len("_design/"):]
    language = doc.get("language", "javascript")
    if not isinstance(language, str) or not language.strip():
        raise UsageError(f"{where}: language must be a non-empty string")
    language = language.strip()
    raw_views = doc.get("views")
    if not isinstance(raw_views, dict) or not raw_views:
        raise UsageError(f"{where}: holds no views")
    views, lib = [], None
    for vname, spec in sorted(raw_views.items()):
        if vname == "lib":
            lib = _lib(spec, f"{where}: views.lib")
            continue
        if not _VIEW_NAME.match(vname):
            raise UsageError(f"{where}: bad view name {vname!r}")
        if not isinstance(spec, dict) or not isinstance(spec.get("map"), str) or not spec["map"].strip():
            raise UsageError(f"{where}: view {vname!r} has no map function")
        reduce = spec.get("reduce")
        if reduce is not None:
            if not isinstance(reduce, str) or not reduce.strip():
                raise UsageError(f"{where}: view {vname!r} has a reduce that is not source text")
            reduce = _code(reduce)
            if reduce.startswith("_") and reduce not in BUILTIN_REDUCES:
                raise UsageError(f"{where}: view {vname!r}: unknown built-in reduce {reduce!r} "
                                 f"(CouchDB has {', '.join(BUILTIN_REDUCES)})")
        views.append(View(vname, _code(spec["map"]), reduce))
    if not views:
        raise UsageError(f"{where}: holds only views.lib, no view")
    options = doc.get("options")
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise UsageError(f"{where}: options must be an object")
    return DesignDoc(name=name, language=language, views=tuple(views), lib=lib,
                     options=dict(sorted(options.items())), source=source)


def parse_view_list(text: str | None) -> list[str] | None:
    """--view a,b -> ['a', 'b']; None or blank -> None (all views)."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    return names or None


def select(ddoc: DesignDoc, names: Iterable[str] | None) -> DesignDoc:
    """Keep only the named views (order of the design doc); unknown names are an error listing the known."""
    if names is None:
        return ddoc
    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in ddoc.view_names]
    if unknown:
        raise UsageError(f"{ddoc.source or ddoc.name}: no view {', '.join(map(repr, unknown))} "
                         f"(has {', '.join(ddoc.view_names)})")
    return DesignDoc(name=ddoc.name, language=ddoc.language,
                     views=tuple(v for v in ddoc.views if v.name in wanted), lib=ddoc.lib,
                     options=ddoc.options, source=ddoc.source)


# --------------------------------------------------------------------------- the three input forms

def _read_text(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {p}: {exc.strerror}") from None


def _read_json(p: Path) -> Any:
    text = _read_text(p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{p}: not JSON (line {exc.lineno} column {exc.colno}: {exc.msg})") from None


def folder_json(root: Path) -> dict:
    """A couchapp-style folder -> the design doc JSON it pushes to (before normalise)."""
    vdir = root / "views"
    if not vdir.is_dir():
        raise UsageError(f"{root}: no views/ folder (expected views/<name>/map.js)")
    views: dict = {}
    for sub in sorted(p for p in vdir.iterdir() if p.is_dir()):
        if sub.name == "lib":
            views["lib"] = _lib_folder(sub)
            continue
        maps = [sub / m for m in _MAP_NAMES if (sub / m).is_file()]
        if not maps:
            raise UsageError(f"{sub}: no map.js")
        spec = {"map": _read_text(maps[0])}
        reduces = sorted(sub.glob("reduce.*"))
        if reduces:
            spec["reduce"] = _read_text(reduces[0])
        views[sub.name] = spec
    doc: dict = {"_id": f"_design/{root.name}", "views": views}
    if (root / "_id").is_file():
        doc["_id"] = _read_text(root / "_id").strip()
    if (root / "language").is_file():
        doc["language"] = _read_text(root / "language").strip()
    if (root / "options.json").is_file():
        doc["options"] = _read_json(root / "options.json")
    return doc


def _lib_folder(d: Path) -> dict:
    out: dict = {}
    for p in sorted(d.iterdir()):
        if p.is_dir():
            out[p.name] = _lib_folder(p)
        elif p.is_file() and not p.name.startswith("."):
            out[p.name.rsplit(".", 1)[0] if "." in p.name else p.name] = _read_text(p)
    return out


def split_ddoc_url(url: str) -> tuple[str, str, str]:
    """http://u:p@host:5984/db/_design/app -> (url with credentials, db, 'app'); db may be %2F-encoded."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    m = re.fullmatch(r"/(.+)/_design/([^/]+)", path)
    if not m:
        raise UsageError(f"{mask_url(url)}: expected URL/db/_design/name")
    base = url[: url.index(parts.netloc) + len(parts.netloc)]
    return base, unquote(m.group(1)), unquote(m.group(2))


def fetch_json(url: str, env: dict | None = None) -> tuple[dict, str]:
    """GET a live design doc; returns (JSON, masked URL). Credentials as in couch.connect."""
    base, db, name = split_ddoc_url(url)
    split_credentials(base)                       # rejects a URL without scheme/host, masked
    couch = connect(base, env=env)
    shown = f"{mask_url(base)}/{db}/_design/{name}"
    try:
        doc = couch.get(f"{db_path(db)}/_design/{quote(name, safe='')}")
    except CouchError as exc:
        raise UsageError(f"{shown}: CouchDB answered {exc.status} {exc.error}"
                         + (f" ({exc.reason})" if exc.reason else "")) from None
    return doc, shown


def is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def load(source: str | Path, views: Iterable[str] | None = None, *, env: dict | None = None) -> DesignDoc:
    """SOURCE (JSON file, couchapp folder or URL/db/_design/name) -> normalised DesignDoc, views selected."""
    s = str(source)
    if is_url(s):
        doc, shown = fetch_json(s, env)
        ddoc = normalise(doc, source=shown)
    else:
        p = Path(s)
        if p.is_dir():
            ddoc = normalise(folder_json(p), source=str(p))
        elif p.is_file():
            ddoc = normalise(_read_json(p), source=str(p))
        else:
            raise UsageError(f"design doc not found: {s} (a .json file, a couchapp folder or URL/db/_design/name)")
    return select(ddoc, views)
