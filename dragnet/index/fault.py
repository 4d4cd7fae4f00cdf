"""Whose fault is a difference between engines: the function's or the engine's.

CouchDB requires reduce functions to be commutative and associative, and map functions to be pure; real
apps break both rules. Then two builds differ whatever the engine: the grouping of values CouchDB hands
to reduce and rereduce follows the B-tree, which can change from one build to the next, and `Date.now()`
or `Math.random()` change from one call to the next. So every difference is put in one of three classes:

- ORDER: an order-dependent reduce. The rows feeding the differing key are reduced in the **reference
  engine itself** over several orders and chunkings (CouchDB 3.5's B-tree batches from
  dragnet.index.reduce_batches, one call in view order, reversed, seeded shuffles cut into chunks and
  rereduced both ways); when the engine disagrees with itself, the function depends on the order.
- NONDETERMINISTIC_MAP: the reference engine maps the same document differently twice.
- ENGINE: neither; the engine computes something else than the reference does.

A difference between two builds of one engine is by definition never the engine's (ORDER for reduce
results, NONDETERMINISTIC_MAP for map rows). The smallest example found is kept: two rows whose values
reduced in both orders give different results, or else the two whole procedures that disagree.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from dragnet.index.rows import values_equal

ORDER = "order-dependent reduce"
NONDETERMINISTIC_MAP = "non-deterministic map"
ENGINE = "engine"
UNCHECKED = "unclassified"        # the reference engine could not be run here
CLASSES = (ENGINE, UNCHECKED, ORDER, NONDETERMINISTIC_MAP)
FUNCTION_CLASSES = (ORDER, NONDETERMINISTIC_MAP)   # the function's fault: exit 0 unless --strict

SHUFFLES = 3           # seeded shuffles, each cut into chunks and rereduced in both orders
PAIR_BUDGET = 300      # two-row orders tried when looking for the smallest example
MAP_REPEATS = 3        # times a document is mapped to see whether it maps alike


class Engine(Protocol):
    """What the checks need of a query server: the protocol's reduce, rereduce and map_doc."""

    def reduce(self, source: str, kvs: list) -> Any: ...
    def rereduce(self, source: str, values: list) -> Any: ...
    def map_doc(self, doc: dict) -> Any: ...


# ---------------------------------------------------------------- rows feeding a reduce key (pure)

def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def feeding_rows(map_rows: Iterable[dict], query: str, key: Any) -> list[list]:
    """The map rows ({"id","key","value"}, view order) that reduce into `key` of `query` (group0: every
    row; group1: rows whose key's first element is key[0], or whose non-array key is `key`; exact: rows
    with that key), as the protocol's kvs `[[key, id], value]`."""
    want = _canon(key)
    out = []
    for r in map_rows:
        k = r["key"]
        if query == "group0":
            hit = True
        elif query == "group1":
            hit = _canon(k[:1]) == want if isinstance(k, list) else _canon(k) == want
        else:
            hit = _canon(k) == want
        if hit:
            out.append([[k, r["id"]], r["value"]])
    return out


# ---------------------------------------------------------------- the order check (engine calls)

@dataclass
class Trial:
    label: str
    result: Any


@dataclass
class Example:
    """The smallest disagreement found: the values, and the two ways of reducing them."""

    values: list                 # the rows' values ([[key, id], value] for reduce of rows)
    first: str                   # how the first result was computed
    second: str
    first_result: Any
    second_result: Any


@dataclass
class OrderCheck:
    rows: int
    trials: list[Trial]
    order_dependent: bool
    example: Example | None = None
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _chunks(items: list, sizes: Sequence[int]) -> list[list]:
    out, i = [], 0
    for s in sizes:
        if i >= len(items):
            break
        out.append(items[i:i + s])
        i += s
    if i < len(items):
        out.append(items[i:])
    return out


def _chunked(engine: Engine, source: str, kvs: list, sizes: Sequence[int], reverse_rereduce: bool) -> Any:
    reds = [engine.reduce(source, c) for c in _chunks(kvs, sizes)]
    if len(reds) == 1:
        return reds[0]
    return engine.rereduce(source, list(reversed(reds)) if reverse_rereduce else reds)


def btree_result(engine: Engine, source: str, kvs: list) -> Any:
    """The root reduction over CouchDB 3.5's B-tree batches (dragnet.index.reduce_batches) for these rows."""
    from dragnet.index.reduce_batches import plan_and_reduce

    rows = [((k, i), v) for (k, i), v in kvs]
    def send(call):
        if call.kind == "reduce":
            return [engine.reduce(source, call.message[2])]
        return [engine.rereduce(source, call.message[2])]
    root, _ = plan_and_reduce(rows, [source], send)
    return root[0] if root else None


def check_order(engine: Engine, source: str, kvs: list, *, seed: int = 1, shuffles: int = SHUFFLES,
                pair_budget: int = PAIR_BUDGET) -> OrderCheck:
    """Reduce kvs in the engine over several orders and chunkings; order-dependent when results differ."""
    trials = [Trial("CouchDB 3.5 B-tree batches, view order", btree_result(engine, source, kvs)),
              Trial("one reduce, view order", engine.reduce(source, kvs)),
              Trial("one reduce, reversed", engine.reduce(source, list(reversed(kvs))))]
    rng = random.Random(seed)
    for s in range(shuffles):
        shuffled = list(kvs)
        rng.shuffle(shuffled)
        sizes, left = [], len(shuffled)
        while left > 0:
            n = rng.randint(1, max(1, min(left, len(shuffled) // 3 or 1)))
            sizes.append(n)
            left -= n
        for rev in (False, True):
            trials.append(Trial(f"shuffle #{s + 1} (seed {seed}) in {len(sizes)} chunks, rereduce "
                                f"{'reversed' if rev else 'in order'}", _chunked(engine, source, shuffled, sizes, rev)))
    first = trials[0]
    other = next((t for t in trials[1:] if not values_equal(t.result, first.result)), None)
    if other is None:
        return OrderCheck(len(kvs), trials, False)
    example = smallest_example(engine, source, kvs, [first.result, other.result], budget=pair_budget) or Example(
        values=[], first=first.label, second=other.label, first_result=first.result, second_result=other.result)
    return OrderCheck(len(kvs), trials, True, example)


def _candidate_pairs(kvs: list, results: Sequence[Any], budget: int, rng: random.Random) -> Iterable[tuple[int, int]]:
    """Pairs of rows most likely to disagree first: rows whose value is one of the differing results (a
    reduce that picks one value), rows of one document, neighbours, then random pairs."""
    seen: set = set()
    def fresh(i, j):
        key = (min(i, j), max(i, j))
        if i == j or key in seen:
            return False
        seen.add(key)
        return True
    picked = [[i for i, (_, v) in enumerate(kvs) if values_equal(v, r)][:20] for r in results]
    for i in picked[0]:
        for j in picked[-1]:
            if fresh(i, j):
                yield i, j
    by_doc: dict = {}
    for i, ((_, doc_id), _) in enumerate(kvs):
        by_doc.setdefault(doc_id, []).append(i)
    for idx in by_doc.values():
        for a in range(len(idx)):
            for b in range(a + 1, len(idx)):
                if fresh(idx[a], idx[b]):
                    yield idx[a], idx[b]
    for i in range(len(kvs) - 1):
        if fresh(i, i + 1):
            yield i, i + 1
    for _ in range(budget):
        if len(kvs) < 2:
            return
        i, j = rng.randrange(len(kvs)), rng.randrange(len(kvs))
        if fresh(i, j):
            yield i, j


def smallest_example(engine: Engine, source: str, kvs: list, results: Sequence[Any], *,
                     budget: int = PAIR_BUDGET, seed: int = 1) -> Example | None:
    """Two rows whose reduce in one order differs from the other order (or whose reductions rereduced in
    both orders differ), within `budget` pairs."""
    rng = random.Random(seed)
    for n, (i, j) in enumerate(_candidate_pairs(kvs, results, budget, rng)):
        if n >= budget:
            return None
        a, b = kvs[i], kvs[j]
        r1, r2 = engine.reduce(source, [a, b]), engine.reduce(source, [b, a])
        if not values_equal(r1, r2):
            return Example([a, b], "reduce([row 1, row 2])", "reduce([row 2, row 1])", r1, r2)
        ra, rb = engine.reduce(source, [a]), engine.reduce(source, [b])
        r1, r2 = engine.rereduce(source, [ra, rb]), engine.rereduce(source, [rb, ra])
        if not values_equal(r1, r2):
            return Example([a, b], "rereduce([reduce([row 1]), reduce([row 2])])",
                           "rereduce([reduce([row 2]), reduce([row 1])])", r1, r2)
    return None


def maps_alike(engine: Engine, doc: dict, repeats: int = MAP_REPEATS, pause_s: float = 0.002) -> tuple[bool, list]:
    """Map one document `repeats` times (a short pause between, so a clock moves); (all equal, answers)."""
    answers = []
    for i in range(repeats):
        if i:
            time.sleep(pause_s)
        answers.append(engine.map_doc(doc))
    return all(values_equal(a, answers[0]) for a in answers[1:]), answers


# ---------------------------------------------------------------- a finding and the classification

@dataclass
class Finding:
    """One differing query of one view, classified."""

    query: str                     # "view.query" as dragnet.index.rows names it
    cls: str
    differences: int
    reason: str
    where: Any = None              # the document id or reduce key examined
    example: dict | None = None    # Example as a dict, or the two map answers
    trials: list | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def class_counts(findings: Iterable[Finding | dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        cls, n = (f.cls, f.differences) if isinstance(f, Finding) else (f["cls"], f["differences"])
        out[cls] = out.get(cls, 0) + n
    return out


def blocking(counts: dict[str, int] | None, strict: bool = False) -> bool:
    """Whether these differences fail the command: engine (or unchecked) ones always, the function's
    own only with --strict."""
    if not counts:
        return False
    return any(n for c, n in counts.items() if strict or c not in FUNCTION_CLASSES)


def same_engine_class(query: str) -> str:
    """A difference between two builds of one engine: the function's, by definition."""
    return NONDETERMINISTIC_MAP if query.endswith(".map") else ORDER


# ---------------------------------------------------------------- classify a comparison

@dataclass
class Inputs:
    """What classification reads: the reference run's dumped rows, the design doc, and how to reach the
    reference engine and the documents."""

    reference_rows: dict[str, str]                 # "view.query" -> dump file (dragnet.index.rows.dump)
    views: dict                                    # the design doc's views
    engine: Callable[[str], Engine] | None         # view -> an Engine running its map (None: not runnable)
    fetch_doc: Callable[[str], dict | None]        # doc id -> the document
    why_unchecked: str = ""
    max_docs: int = 5
    max_keys: int = 3
    cache: dict = field(default_factory=dict)


def classify(comparison: dict, inputs: Inputs) -> list[Finding]:
    """A dragnet.index.rows.compare_files result, query by query, into findings (one per differing query)."""
    from dragnet.index.rows import read_rows

    queries = comparison.get("queries") or {}
    findings: list[Finding] = []
    map_class: dict[str, str] = {}
    order = sorted(queries, key=lambda q: (not q.endswith(".map"), q))     # map first: reduces may follow it
    for name in order:
        q = queries[name]
        n = int(q.get("differences") or 0)
        if not n:
            continue
        view, query = name.rsplit(".", 1)
        if q.get("missing_in"):
            findings.append(Finding(name, ENGINE, n, f"query missing in the {q['missing_in']}"))
            continue
        if inputs.engine is None:
            findings.append(Finding(name, UNCHECKED, n, inputs.why_unchecked or "reference engine not runnable"))
            continue
        try:
            engine = inputs.cache.get(view) or inputs.engine(view)
            inputs.cache[view] = engine
            if query == "map":
                findings.append(_classify_map(name, n, q, engine, inputs))
                map_class[view] = findings[-1].cls
            elif map_class.get(view) == NONDETERMINISTIC_MAP:
                findings.append(Finding(name, NONDETERMINISTIC_MAP, n, "follows from the view's map rows, "
                                                                        "which are not deterministic"))
            else:
                src = (inputs.views.get(view) or {}).get("reduce") or ""
                if src.startswith("_"):
                    findings.append(Finding(name, map_class.get(view, ENGINE), n,
                                            f"built-in {src} over rows that differ" if view in map_class
                                            else f"built-in {src}: computed by CouchDB, not the engine"))
                    continue
                rows = list(read_rows(inputs.reference_rows[f"{view}.map"]))
                findings.append(_classify_reduce(name, n, q, src, rows, engine, inputs))
        except Exception as exc:     # noqa: BLE001 - a check that fails leaves the difference unexplained
            findings.append(Finding(name, UNCHECKED, n, f"check failed: {exc}"))
    return findings


def _classify_map(name: str, n: int, q: dict, engine: Engine, inputs: Inputs) -> Finding:
    for ex in (q.get("examples") or [])[:inputs.max_docs]:
        doc = inputs.fetch_doc(str(ex["where"]))
        if doc is None:
            continue
        alike, answers = maps_alike(engine, doc)
        if not alike:
            return Finding(name, NONDETERMINISTIC_MAP, n, "the reference engine maps the same document "
                           "differently from one call to the next", ex["where"], {"answers": answers})
    return Finding(name, ENGINE, n, "the reference engine maps the differing documents alike every time")


def _classify_reduce(name: str, n: int, q: dict, source: str, rows: list[dict], engine: Engine,
                     inputs: Inputs) -> Finding:
    query = name.rsplit(".", 1)[1]
    checked = []
    for ex in (q.get("examples") or [])[:inputs.max_keys]:
        kvs = feeding_rows(rows, query, ex["where"])
        check = check_order(engine, source, kvs)
        checked.append(len(kvs))
        if check.order_dependent:
            return Finding(name, ORDER, n, f"the reference engine itself gives different results for the same "
                           f"{len(kvs)} rows in different orders and chunkings", ex["where"],
                           asdict(check.example) if check.example else None,
                           [asdict(t) for t in check.trials])
    return Finding(name, ENGINE, n, f"the reference engine gave one result over {len(checked)} key(s)' rows "
                   f"({', '.join(map(str, checked))} rows) in every order and chunking tried")


def blocking_runs(runs: list[dict], strict: bool = False) -> list[dict]:
    """Runs whose differences fail the bench: the engine's always, the function's own with --strict
    (results without classes, from before classification, count as the engine's)."""
    out = []
    for r in runs:
        for key in ("comparison", "repeat_comparison"):
            cmp = r.get(key) or {}
            if cmp.get("differences") and (blocking(cmp.get("classes"), strict) or "classes" not in cmp):
                out.append(r)
                break
    return out
