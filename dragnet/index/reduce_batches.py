"""The reduce/rereduce messages CouchDB 3.5 sends while building a view's B-tree (pure; no I/O).

What is modelled, with the CouchDB 3.5.0 source it follows (apache/couchdb, tag 3.5.0):

* Views that share a map function are one index (`#mrview`): couch_mrview_util.erl:224-266
  (`ddoc_to_mrst`) groups views by map source, numbers the groups in sorted order of the source (that is
  the order of `add_fun` and of the lists in a `map_doc` answer), and keeps the group's reduce functions
  in reverse order of the design document (`[{Name, RedSrc} | View#mrview.reduce_funs]`).
* A document's rows with the same key are merged into `{dups, Values}` (couch_mrview_updater.erl:261-279,
  over `lists:sort(KVs)`) and expanded again before reduce (couch_mrview_util.erl:1004-1010, 1247), so
  reduce sees them in Erlang term order of the values.
* The B-tree sorts rows by view collation of the key, then the doc id (couch_ejson_compare:less_json_ids).
* Each leaf (kv) node gets one `["reduce", OsRedSrcs, [[[key, docid], value], ...]]` with every
  non-built-in reduce function of the index at once (couch_btree.erl:458-459 `reduce_node`,
  couch_mrview_util.erl:1246-1250, couch_query_servers.erl:127-161 `reduce`/`os_reduce`; built-ins
  `_sum`, `_count`, `_stats`, `_approx_count_distinct` are computed in Erlang, couch_query_servers.erl:186+).
* Each inner (kp) node gets one `["rereduce", [RedSrc], Values]` per non-built-in function over its
  children's reductions (couch_btree.erl:456-457, couch_mrview_util.erl:1251-1264,
  couch_query_servers.erl:110-125, 163-177). `group_reductions_results` (couch_query_servers.erl:80-96)
  transposes the children's result lists with a foldl that prepends, so the values of the 1st, 3rd, …
  reduce function of the index arrive in reverse child order and those of the 2nd, 4th, … in child order.
* Nodes are cut by `chunkify` (couch_btree.erl:378-406): `erlang:external_size(T, [{minor_version, 1}])`
  (couch_db.hrl:37) against `btree_chunk_size` 1279 (couch_btree.erl:409-414); levels of kp nodes are
  written until one root is left (couch_btree.erl:364-370 `complete_root`); a single leaf is the root and
  gets no rereduce.

What is not: the tree is the one built when all rows go into an empty B-tree at once (CouchDB's updater
inserts them in batches of up to 500 documents, view_updater/queue_item_cap, and re-reduces each node it
rewrites, so a real build makes more calls over the same kind of batches); keys are ordered with code-point
string comparison, not ICU (node boundaries can move for non-ASCII keys); in kp entries, file offsets and
node sizes count as 4-byte integers and built-in reductions as nothing.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

CHUNK_SIZE = 1279  # [couchdb] btree_chunk_size default (couch_btree.erl:409-414)
BUILTIN_PREFIX = "_"
_INT32 = 5  # INTEGER_EXT: what a file offset or node size costs in a kp entry


class Atom(str):
    """An Erlang atom (`dups`), so its size is an atom's, not a binary's."""


# -- erlang:external_size(T, [{minor_version, 1}]) of EJSON (jiffy's decoding of JSON) ----------

def _size(t: Any) -> int:
    # atoms: ATOM_EXT (minor_version 1 keeps Latin-1 atoms in the old encoding)
    if t is None or t is True:
        return 7
    if t is False:
        return 8
    if isinstance(t, Atom):
        return 3 + len(t.encode("latin-1"))
    if isinstance(t, int):
        if 0 <= t <= 255:
            return 2                  # SMALL_INTEGER_EXT
        if -2 ** 31 <= t < 2 ** 31:
            return 5                  # INTEGER_EXT
        n = (abs(t).bit_length() + 7) // 8
        return 3 + n if n < 256 else 6 + n
    if isinstance(t, float):
        return 9                      # NEW_FLOAT_EXT
    if isinstance(t, str):
        return 5 + len(t.encode("utf-8"))  # BINARY_EXT
    if isinstance(t, list):
        if not t:
            return 1                  # NIL_EXT
        if len(t) < 65536 and all(type(x) is int and 0 <= x <= 255 for x in t):
            return 3 + len(t)         # STRING_EXT
        return 6 + sum(_size(x) for x in t)
    if isinstance(t, dict):           # {[{Key, Value}, ...]}
        inner = 1 if not t else 6 + sum(2 + 5 + len(k.encode("utf-8")) + _size(v) for k, v in t.items())
        return 2 + inner
    if isinstance(t, tuple):
        return (2 if len(t) < 256 else 5) + sum(_size(x) for x in t)
    raise TypeError(f"no Erlang term for {type(t).__name__}")


def term_size(t: Any) -> int:
    """`erlang:external_size(T, [{minor_version, 1}])`: the encoding plus its version byte."""
    return 1 + _size(t)


def chunkify(items: Sequence[Any], sizes: Sequence[int], chunk_size: int = CHUNK_SIZE) -> list[list[Any]]:
    """couch_btree:chunkify/1 over items whose term sizes are `sizes` (couch_btree.erl:378-406)."""
    if not items:
        return []
    total = 1 + 5 + sum(s - 1 for s in sizes) + 1   # the list itself as one term
    if total <= chunk_size:
        return [list(items)]
    threshold = total // (total // chunk_size + 1)
    out: list[list[Any]] = []
    cur: list[Any] = []
    cur_size = 0
    for item, size in zip(items, sizes):
        if size + cur_size > threshold and cur:
            out.append(cur + [item])   # the element that overflows closes the chunk
            cur, cur_size = [], 0
        else:
            cur.append(item)
            cur_size += size
    if len(cur) == 1 and out:
        out[-1].append(cur[0])         # a lone last element joins the previous chunk
    elif cur:
        out.append(cur)
    return out


# -- ordering ---------------------------------------------------------------------------------

def _class(v: Any) -> int:
    if v is None:
        return 0
    if v is False:
        return 1
    if v is True:
        return 2
    if isinstance(v, (int, float)):
        return 3
    if isinstance(v, str):
        return 4
    if isinstance(v, list):
        return 5
    return 6


def collate(a: Any, b: Any) -> int:
    """View collation (null < false < true < numbers < strings < arrays < objects); strings by code point."""
    ca, cb = _class(a), _class(b)
    if ca != cb:
        return -1 if ca < cb else 1
    if ca == 5:
        for x, y in zip(a, b):
            c = collate(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ca == 6:
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            c = collate(ka, kb) or collate(va, vb)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ca in (3, 4):
        return (a > b) - (a < b)
    return 0


def _row_cmp(x: tuple, y: tuple) -> int:
    (ka, ida), _ = x
    (kb, idb), _ = y
    c = collate(ka, kb)
    if c:
        return c
    ba, bb = ida.encode("utf-8"), idb.encode("utf-8")
    return (ba > bb) - (ba < bb)


def _erlang_order(v: Any) -> tuple:
    """Erlang term order of an EJSON value: number < atom < tuple (object) < list < binary."""
    if isinstance(v, bool) or v is None:
        return (1, {False: "false", None: "null", True: "true"}[v])
    if isinstance(v, (int, float)):
        return (0, v)
    if isinstance(v, dict):
        return (2, 1, (4, [(2, 2, (5, k.encode("utf-8")), _erlang_order(x)) for k, x in v.items()]))
    if isinstance(v, list):
        return (4, [_erlang_order(x) for x in v])
    return (5, v.encode("utf-8"))


def _same(a: Any, b: Any) -> bool:
    # Erlang's pattern match: 1 and 1.0 are different keys
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


def btree_rows(docs: Iterable[tuple[str, Sequence[Sequence[Any]]]]) -> list[tuple]:
    """Every document's emitted `[key, value]` rows as the view B-tree holds them, in B-tree order:
    `((key, doc_id), value)`, or `((key, doc_id), (Atom('dups'), values))` for a key emitted twice."""
    out: list[tuple] = []
    for doc_id, rows in docs:
        merged: list[list] = []   # [key, [values]]
        for key, value in rows:
            for m in merged:
                if _same(m[0], key):
                    m[1].append(value)
                    break
            else:
                merged.append([key, [value]])
        for key, values in merged:
            if len(values) == 1:
                out.append(((key, doc_id), values[0]))
            else:
                out.append(((key, doc_id), (Atom("dups"), sorted(values, key=_erlang_order))))
    out.sort(key=functools.cmp_to_key(_row_cmp))
    return out


def expand(node: Sequence[tuple]) -> list[list]:
    """A leaf's rows as the query server receives them: `[[key, doc_id], value]`, dups expanded."""
    kvs = []
    for (key, doc_id), value in node:
        if isinstance(value, tuple) and value and value[0] == "dups" and isinstance(value[0], Atom):
            kvs.extend([[key, doc_id], v] for v in value[1])
        else:
            kvs.append([[key, doc_id], value])
    return kvs


# -- the calls --------------------------------------------------------------------------------

def is_builtin(source: str) -> bool:
    return source.strip().startswith(BUILTIN_PREFIX)


@dataclass
class Call:
    """One message to the query server while the tree is written."""

    kind: str                 # "reduce" | "rereduce"
    level: int                # 0 = leaves, 1 = their parents, ...
    functions: list[int]      # indexes into the index's reduce functions (CouchDB order)
    message: list
    items: int                # rows (reduce) or child reductions (rereduce)


def _row_size(row: tuple) -> int:
    return term_size(row)


def _kp_size(last_key: tuple, count: int, reds: list, ext: int) -> int:
    # {LastKey, {Pointer, {Count, Reductions, ExternalSize}, SubTreeSize}} (couch_btree.erl:491)
    return 1 + 2 + _size(last_key) + 2 + _INT32 + (2 + _size(count) + _size(reds) + _size(ext)) + _INT32


def plan_and_reduce(rows: Sequence[tuple], reduce_sources: Sequence[str],
                    send: Callable[[Call], list], chunk_size: int = CHUNK_SIZE) -> tuple[list | None, list[Call]]:
    """Walk the B-tree CouchDB would write for `rows` (from btree_rows), calling `send(call)` for each
    message in order; `send` returns the answer's reductions (one per function of the message).

    `reduce_sources` are all the index's reduce functions in CouchDB order (built-ins included, they
    count for the rereduce order). Returns the root's reductions, one per non-built-in function (None
    for an empty view), and every call made.
    """
    os_idx = [i for i, s in enumerate(reduce_sources) if not is_builtin(s)]
    calls: list[Call] = []
    if not os_idx or not rows:
        return None, calls
    os_srcs = [reduce_sources[i] for i in os_idx]
    # entries: (last_key, count, {function index: reduction}, external size)
    entries = []
    for node in chunkify(rows, [_row_size(r) for r in rows], chunk_size):
        kvs = expand(node)
        call = Call("reduce", 0, list(os_idx), ["reduce", os_srcs, kvs], len(kvs))
        calls.append(call)
        reds = send(call)
        ext = term_size(reds) + sum(term_size(k) + term_size(v) for (k, _), v in kvs)
        entries.append((node[-1][0], len(kvs), dict(zip(os_idx, reds)), ext))
    level = 0
    while len(entries) > 1:
        level += 1
        sizes = [_kp_size(k, c, list(r.values()), e) for k, c, r, e in entries]
        parents = []
        for node in chunkify(entries, sizes, chunk_size):
            reds = {}
            for i in os_idx:
                values = [e[2][i] for e in node]
                if i % 2 == 0:  # group_reductions_results: every other function gets them reversed
                    values.reverse()
                call = Call("rereduce", level, [i], ["rereduce", [reduce_sources[i]], values], len(values))
                calls.append(call)
                reds[i] = send(call)[0]
            parents.append((node[-1][0], sum(e[1] for e in node), reds, sum(e[3] for e in node)))
        entries = parents
    root = entries[0][2]
    return [root[i] for i in os_idx], calls
