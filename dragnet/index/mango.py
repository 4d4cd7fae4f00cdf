"""Mango JSON indexes as benchmark input, and the JavaScript view that emits the same rows.

A Mango JSON index is an mrview index in language `query`: CouchDB's own `mango_native_proc` maps each
document to one row, key `[value of each field]`, value null, for documents that have every field and
match the index's `partial_filter_selector` (design documents never). `js_map` writes the JavaScript map
function that does the same, so one index can be built by Mango and by every JavaScript engine and their
rows compared.

What the translation follows (CouchDB 3.5 `mango_selector`, `mango_doc`): a field path is split on dots
and walks objects by key and arrays by a numeric index; a missing field or a path through a scalar fails
every condition except `$exists: false`; `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` compare with view
collation across types (null < false < true < numbers < strings < arrays < objects), so `{"$gt": 3}` also
matches a string; `$in`/`$nin` on an array field match when any element is (not) among the values.
Strings are compared by code point, not by CouchDB's ICU collation: ranges over non-ASCII or mixed-case
strings can differ, which the row comparison then shows. Other operators are refused.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from dragnet.couchdb.client import Couch, CouchError, connect, db_path, mask_url
from dragnet.index.design import Design
from dragnet.errors import DragnetError, UsageError

LANGUAGE = "query"          # the CouchDB language of a Mango index's design document
ENGINE = "mango"            # its name among bench languages
COMPARISONS = {"$eq": "== 0", "$ne": "!= 0", "$gt": "> 0", "$gte": ">= 0", "$lt": "< 0", "$lte": "<= 0"}
SUPPORTED = (*COMPARISONS, "$in", "$nin", "$exists", "$and", "$or", "$nor", "$not")
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Index:
    """One Mango JSON index definition as POST /db/_index takes it."""

    name: str
    fields: tuple[str, ...]
    partial_filter_selector: dict | None = None
    ddoc: str | None = None

    def body(self) -> dict:
        """The POST /db/_index request for this index."""
        index: dict = {"fields": list(self.fields)}
        if self.partial_filter_selector:
            index["partial_filter_selector"] = self.partial_filter_selector
        return {"index": index, "name": self.name, "type": "json"}

    @property
    def design_id(self) -> str:
        """The one design-doc id both the Mango build and its JavaScript equivalent are reported under."""
        return f"_design/mango-{_NAME_OK.sub('_', self.name)}"


# ---------------------------------------------------------------- reading definitions (pure)

def _field_name(f: Any, where: str) -> str:
    if isinstance(f, str):
        name = f
    elif isinstance(f, dict) and len(f) == 1:
        name, direction = next(iter(f.items()))
        if direction not in ("asc", "desc"):
            raise UsageError(f"{where}: field {name!r}: sort direction must be asc or desc, got {direction!r}")
    else:
        raise UsageError(f"{where}: a field is a name or {{name: \"asc\"|\"desc\"}}, got {json.dumps(f)}")
    if not name or "\\" in name or name.startswith(".") or name.endswith(".") or ".." in name:
        raise UsageError(f"{where}: field {name!r} is not a dotted path dragnet can translate")
    return name


def parse_index(body: Any, where: str, position: int = 0) -> Index:
    """One definition: a POST /db/_index body ({"index": {...}, "name", "ddoc", "type"}) or an entry of
    GET /db/_index ({"name", "ddoc", "type", "def": {...}})."""
    if not isinstance(body, dict):
        raise UsageError(f"{where}: index #{position + 1} is not a JSON object")
    kind = body.get("type", "json")
    name = body.get("name") or f"index{position + 1}"
    where = f"{where}: index {name!r}"
    if kind != "json":
        raise UsageError(f"{where}: type {kind!r}; only Mango JSON indexes are measured")
    spec = body.get("index", body.get("def"))
    if not isinstance(spec, dict):
        raise UsageError(f"{where}: no \"index\" object (fields, partial_filter_selector)")
    fields = spec.get("fields")
    if not isinstance(fields, list) or not fields:
        raise UsageError(f"{where}: \"fields\" must be a non-empty list")
    names = tuple(_field_name(f, where) for f in fields)
    partial = spec.get("partial_filter_selector", body.get("partial_filter_selector"))
    if partial is not None and not isinstance(partial, dict):
        raise UsageError(f"{where}: partial_filter_selector must be an object")
    ddoc = body.get("ddoc")
    if ddoc is not None and not isinstance(ddoc, str):
        raise UsageError(f"{where}: ddoc must be a string")
    index = Index(str(name), names, partial or None, ddoc)
    js_map(index)                  # an operator the translation does not know is refused before any build
    return index


def parse_indexes(doc: Any, where: str) -> list[Index]:
    """A file's or listing's definitions: one body, a list of them, or GET /db/_index's {"indexes": [...]}
    (the `special` _all_docs index skipped)."""
    if isinstance(doc, dict) and isinstance(doc.get("indexes"), list):
        items = [i for i in doc["indexes"] if not (isinstance(i, dict) and i.get("type") == "special")]
    elif isinstance(doc, list):
        items = doc
    else:
        items = [doc]
    out = [parse_index(b, where, i) for i, b in enumerate(items)]
    if not out:
        raise UsageError(f"{where}: no Mango JSON index in it")
    names = [i.name for i in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise UsageError(f"{where}: index name {dup!r} given twice")
    return out


def load(source: str, env: dict | None = None) -> list[Index]:
    """Definitions from a JSON file or a live `URL/db/_index` listing."""
    if source.startswith(("http://", "https://")):
        from urllib.parse import unquote, urlsplit, urlunsplit

        shown = mask_url(source)
        parts = urlsplit(source)
        segments = parts.path.strip("/").split("/")
        if len(segments) < 2 or segments[-1] != "_index" or not segments[-2]:
            raise UsageError(f"--mango {shown}: expected URL/db/_index")
        prefix = "/".join(segments[:-2])
        couch = connect(urlunsplit((parts.scheme, parts.netloc, "/" + prefix if prefix else "", "", "")), env=env)
        try:
            doc = couch.get(f"{db_path(unquote(segments[-2]))}/_index")
        except CouchError as exc:
            raise DragnetError(f"{shown}: {exc.answered()}") from None
        return parse_indexes(doc, shown)
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"--mango {source}: no such file (a JSON file of POST /db/_index bodies, or "
                         f"URL/db/_index)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not valid JSON: {exc}") from None
    return parse_indexes(doc, str(path))


# ---------------------------------------------------------------- the JavaScript equivalent (pure)

_JS_HELPERS = r"""
  var MISSING = {};
  function get(v, path) {
    for (var i = 0; i < path.length; i++) {
      var p = path[i];
      if (Array.isArray(v)) {
        if (!/^[0-9]+$/.test(p) || +p >= v.length) return MISSING;
        v = v[+p];
      } else if (v !== null && typeof v === 'object') {
        if (!Object.prototype.hasOwnProperty.call(v, p)) return MISSING;
        v = v[p];
      } else {
        return MISSING;
      }
    }
    return v;
  }
  function rank(v) {
    if (v === null) return 0;
    if (v === false) return 1;
    if (v === true) return 2;
    if (typeof v === 'number') return 3;
    if (typeof v === 'string') return 4;
    if (Array.isArray(v)) return 5;
    return 6;
  }
  function cmp(a, b) {
    var ra = rank(a), rb = rank(b), i, c;
    if (ra !== rb) return ra < rb ? -1 : 1;
    if (ra === 3 || ra === 4) return a < b ? -1 : a > b ? 1 : 0;
    if (ra === 5) {
      for (i = 0; i < a.length && i < b.length; i++) { c = cmp(a[i], b[i]); if (c) return c; }
      return a.length - b.length < 0 ? -1 : a.length > b.length ? 1 : 0;
    }
    if (ra === 6) {
      var ka = Object.keys(a), kb = Object.keys(b);
      for (i = 0; i < ka.length && i < kb.length; i++) {
        c = cmp(ka[i], kb[i]) || cmp(a[ka[i]], b[kb[i]]); if (c) return c;
      }
      return ka.length - kb.length < 0 ? -1 : ka.length > kb.length ? 1 : 0;
    }
    return 0;
  }
  function isin(v, args) {
    var vs = Array.isArray(v) ? v : [v];
    for (var i = 0; i < args.length; i++)
      for (var j = 0; j < vs.length; j++) if (cmp(vs[j], args[i]) === 0) return true;
    return false;
  }
"""


def _is_operator_object(v: Any) -> bool:
    return isinstance(v, dict) and len(v) > 0 and all(isinstance(k, str) and k.startswith("$") for k in v)


def _cond(value_js: str, cond: Any, where: str) -> str:
    """JS for one field's condition (`value_js` is the field's value, or MISSING)."""
    if not isinstance(cond, dict) or not cond or not all(k.startswith("$") for k in cond):
        cond = {"$eq": cond}        # a bare value means equality
    parts = []
    for op, arg in cond.items():
        a = json.dumps(arg, ensure_ascii=False)
        if op in COMPARISONS:
            parts.append(f"({value_js} !== MISSING && cmp({value_js}, {a}) {COMPARISONS[op]})")
        elif op in ("$in", "$nin"):
            if not isinstance(arg, list):
                raise UsageError(f"{where}: {op} takes a list, got {a}")
            test = f"isin({value_js}, {a})"
            parts.append(f"({value_js} !== MISSING && {'!' if op == '$nin' else ''}{test})")
        elif op == "$exists":
            if not isinstance(arg, bool):
                raise UsageError(f"{where}: $exists takes true or false, got {a}")
            parts.append(f"({value_js} {'!==' if arg else '==='} MISSING)")
        elif op == "$not":      # pushed down to the terminals, as mango_selector:norm_negations does
            parts.append(_cond(value_js, _negate_cond(arg, where), where))
        elif op == "$nor":
            parts.append(_cond(value_js, {"$and": [_negate_cond(a, where) for a in _list(op, arg, where)]}, where))
        elif op in ("$and", "$or"):
            parts.append(_combine(op, arg, lambda s: _cond(value_js, s, where), where))
        else:
            raise UsageError(f"{where}: operator {op} is not translated to JavaScript (supported: "
                             f"{', '.join(SUPPORTED)})")
    return "(" + " && ".join(parts) + ")"


def _list(op: str, args: Any, where: str) -> list:
    if not isinstance(args, list) or not args:
        raise UsageError(f"{where}: {op} takes a non-empty list")
    return args


def _combine(op: str, args: Any, one: Callable[[Any], str], where: str) -> str:
    inner = [one(a) for a in _list(op, args, where)]
    return "(" + (" && " if op == "$and" else " || ").join(inner) + ")"


_OPPOSITE = {"$eq": "$ne", "$ne": "$eq", "$gt": "$lte", "$lte": "$gt", "$lt": "$gte", "$gte": "$lt",
             "$in": "$nin", "$nin": "$in"}


def _negate_cond(cond: Any, where: str) -> dict:
    """A field's condition negated the way CouchDB normalises it: each operator turned into its opposite
    (so a missing field still fails, except `$exists`), De Morgan through $and/$or."""
    if not _is_operator_object(cond):
        return {"$ne": cond}
    if len(cond) > 1:
        return {"$or": [_negate_cond({k: v}, where) for k, v in cond.items()]}
    op, arg = next(iter(cond.items()))
    if op in _OPPOSITE:
        return {_OPPOSITE[op]: arg}
    if op == "$exists":
        return {"$exists": not arg}
    if op == "$not":
        return arg if _is_operator_object(arg) else {"$eq": arg}
    if op == "$and":
        return {"$or": [_negate_cond(a, where) for a in _list(op, arg, where)]}
    if op == "$or":
        return {"$and": [_negate_cond(a, where) for a in _list(op, arg, where)]}
    if op == "$nor":
        return {"$or": _list(op, arg, where)}
    raise UsageError(f"{where}: operator {op} is not translated to JavaScript (supported: {', '.join(SUPPORTED)})")


def _flatten(selector: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1} (mango_selector:norm_fields); an operator inside a nested object
    becomes the condition of that object's path."""
    out: dict = {}
    for k, v in selector.items():
        if k.startswith("$"):
            if prefix:
                out.setdefault(prefix[:-1], {})[k] = v
            else:
                out[k] = v
        elif isinstance(v, dict) and v and not _is_operator_object(v):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _negate_selector(selector: Any, where: str) -> dict:
    if not isinstance(selector, dict) or not selector:
        raise UsageError(f"{where}: $not/$nor take a selector object, got {json.dumps(selector)}")
    flat = _flatten(selector)
    if len(flat) > 1:
        return {"$or": [_negate_selector({k: v}, where) for k, v in flat.items()]}
    k, v = next(iter(flat.items()))
    if k == "$and":
        return {"$or": [_negate_selector(a, where) for a in _list(k, v, where)]}
    if k == "$or":
        return {"$and": [_negate_selector(a, where) for a in _list(k, v, where)]}
    if k == "$nor":
        return {"$or": _list(k, v, where)}
    if k == "$not":
        return v
    if k.startswith("$"):
        raise UsageError(f"{where}: operator {k} needs a field (supported: {', '.join(SUPPORTED)})")
    return {k: _negate_cond(v, where)}


def selector_js(selector: Any, where: str, prefix: tuple[str, ...] = ()) -> str:
    """JS for a selector against `doc` (fields nest: {"a": {"b": 1}} is "a.b" equal to 1)."""
    if not isinstance(selector, dict):
        raise UsageError(f"{where}: a selector is an object, got {json.dumps(selector)}")
    if not selector:
        return "true"
    parts = []
    for key, cond in selector.items():
        if key in ("$and", "$or"):
            parts.append(_combine(key, cond, lambda s: selector_js(s, where, prefix), where))
        elif key == "$nor":
            parts.append(selector_js({"$and": [_negate_selector(a, where) for a in _list(key, cond, where)]},
                                     where, prefix))
        elif key == "$not":
            parts.append(selector_js(_negate_selector(cond, where), where, prefix))
        elif key.startswith("$"):
            if not prefix:
                raise UsageError(f"{where}: operator {key} needs a field (supported: {', '.join(SUPPORTED)})")
            parts.append(_cond(_value(prefix), {key: cond}, where))
        elif isinstance(cond, dict) and cond and not _is_operator_object(cond):
            parts.append(selector_js(cond, where, prefix + tuple(key.split("."))))
        else:
            parts.append(_cond(_value(prefix + tuple(key.split("."))), cond, where))
    return "(" + " && ".join(parts) + ")"


def _value(path: Sequence[str]) -> str:
    return f"get(doc, {json.dumps(list(path), ensure_ascii=False)})"


def js_map(index: Index) -> str:
    """The JavaScript map function emitting what `index` holds: key [field values], value null, for
    documents with every field that match the partial filter."""
    where = f"index {index.name!r}"
    lines = ["function (doc) {", _JS_HELPERS.strip("\n")]
    for i, f in enumerate(index.fields):
        lines.append(f"  var k{i} = {_value(f.split('.'))};")
        lines.append(f"  if (k{i} === MISSING) return;")
    if index.partial_filter_selector:
        lines.append(f"  if (!{selector_js(index.partial_filter_selector, where + ' partial_filter_selector')}) return;")
    lines.append(f"  emit([{', '.join(f'k{i}' for i in range(len(index.fields)))}], null);")
    lines.append("}")
    return "\n".join(lines)


def js_design(index: Index) -> Design:
    """The JavaScript equivalent, under the same design-doc id as the Mango build (one report group)."""
    doc = {"_id": index.design_id, "language": "javascript",
           "views": {index.name: {"map": js_map(index), "reduce": "_count"}}}
    return Design(doc=doc, source=f"mango index {index.name} as JavaScript")


# ---------------------------------------------------------------- CouchDB's own judgement (I/O)

def validated_design(couch: Couch, index: Index) -> Design:
    """The Mango design document CouchDB itself makes of `index`: the index is created by POST /_index in
    a scratch database (deleted afterwards), so a definition CouchDB rejects ends here with its error and
    the index's name, before any build; the stored views are what a fresh benchmark copy gets."""
    scratch = f"dragnet_mango_check_{int(time.time() * 1000)}"
    try:
        # inside the try: a signal right after CouchDB made the database still deletes it
        couch.request("PUT", db_path(scratch), ok=(201, 202))
        try:
            made = couch.post(f"{db_path(scratch)}/_index", index.body())
        except CouchError as exc:
            raise UsageError(f"mango index {index.name!r}: CouchDB refused it: {exc.error}"
                             + (f" ({exc.reason})" if exc.reason else "")) from None
        stored = couch.get(f"{db_path(scratch)}/{made['id']}")
    finally:
        try:
            couch.request("DELETE", db_path(scratch), ok=(200, 202, 404))
        except CouchError:
            pass
    doc = {"_id": index.design_id, "language": LANGUAGE, "views": stored["views"]}
    return Design(doc=doc, source=f"mango index {index.name}")


def empty_warning(index: Index, rows: int | None) -> str | None:
    """The warning for an index that holds no row once built (a field path no document has)."""
    if rows != 0:
        return None
    return (f"mango index {index.name!r} is empty: no document has every field of "
            f"{', '.join(index.fields)}" + (" and matches its partial_filter_selector"
                                            if index.partial_filter_selector else ""))
