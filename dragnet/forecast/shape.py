"""Whether the sweep's sample looks like the target, before any build (issue 49).

A forecast carries the sample's cost per document to the target, so the two must have documents of the same
size and maps that emit as many rows a document. Both sides are measured alike: a seeded spread of documents
(data.sample's scores), each re-encoded as compact JSON without `_rev`, and mapped by a query server of the
design document's language (map_doc, as CouchDB sends it), counting the rows each view emits.

`compare` and `unchecked` are pure; `data_shape` reads the data file, `target_shape` the target database
(one `_all_docs` pass of ids, then the sampled documents), and `map_rows` runs a query server.
"""

from __future__ import annotations

import gzip
import heapq
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from dragnet.forecast.model import DB_BACKTESTED

GOAL = 0.10            # as the sizes' goal: a sample further off than this is a different workload
SHAPE_DOCS = 500       # documents mapped on each side: seconds of couchjs, and a mean steady to a few %
SEED = 49
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True)
class Shape:
    """What a set of documents looks like to a view build."""

    docs: int                                   # documents looked at
    mean_bytes: float | None                    # compact JSON, no _rev
    rows_per_doc: dict[str, float] = field(default_factory=dict)   # view -> rows emitted per document
    source: str = ""                            # how it was measured

    def as_dict(self) -> dict:
        return asdict(self)


def doc_bytes(doc: dict) -> int:
    """A document's size as both sides measure it: compact JSON without `_rev` (a sample file has none)."""
    return len(_dumps({k: v for k, v in doc.items() if k != "_rev"}).encode("utf-8"))


def _differs(sample: float | None, target: float | None, goal: float) -> float | None:
    """The sample's relative difference from the target, when both are known and it exceeds the goal."""
    if sample is None or target is None:
        return None
    if target == 0:
        return None if sample == 0 else float("inf")
    rel = sample / target - 1
    return rel if abs(rel) > goal else None


def compare(sample: Shape, target: Shape, goal: float = GOAL) -> list[dict]:
    """One warning per quantity the sample differs from the target in by more than the goal: the document
    size, and each view's rows per document (a view the target was not mapped for is not compared)."""
    out = []
    rel = _differs(sample.mean_bytes, target.mean_bytes, goal)
    if rel is not None:
        out.append({"what": "document size", "sample": sample.mean_bytes, "target": target.mean_bytes,
                    "difference": rel, "unit": "bytes"})
    for view, rows in sample.rows_per_doc.items():
        rel = _differs(rows, target.rows_per_doc.get(view), goal)
        if rel is not None:
            out.append({"what": f"rows per document of view {view}", "sample": rows,
                        "target": target.rows_per_doc[view], "difference": rel, "unit": "rows"})
    return out


def message(w: dict, goal: float = GOAL) -> str:
    """A warning in one line: what differs, both values and by how much."""
    fmt = (lambda v: f"{v:,.0f} bytes") if w["unit"] == "bytes" else (lambda v: f"{v:,.2f}")
    diff = "∞" if w["difference"] == float("inf") else f"{w['difference']:+.0%}"
    return (f"the sample is not the target in small: {w['what']} {fmt(w['sample'])} in the sample, "
            f"{fmt(w['target'])} in the target ({diff}, more than the goal's {goal:.0%}); the cost per document "
            f"it measures may not be the target's")


def unchecked(target: dict, has_design: bool) -> list[str]:
    """The checks a target given as --target-docs (no database to read) could not make, in words."""
    if target.get("url") or target.get("db"):
        return []
    out = []
    if not (target.get("sizes") or {}).get("file"):
        out.append(f"the target's database size (no --target-bytes): its file is forecast from the sweep's databases "
                   f"(±{DB_BACKTESTED:.0%})")
    out.append("the target's document sizes against the sample's (no target database to read)")
    if has_design:
        out.append("the target's rows per document of each view against the sample's (no target database to map)")
    if not target.get("q"):
        out.append("the target's shards (no --target-q): the sweep's q is taken")
    return out


def mean_rows(per_doc: Iterable[Sequence[int]], views: Sequence[str]) -> dict[str, float]:
    """Rows per document of each view from each document's row counts (one count per view, in order)."""
    per_doc = list(per_doc)
    if not per_doc:
        return {}
    return {v: sum(c[i] for c in per_doc) / len(per_doc) for i, v in enumerate(views)}


# ---------------------------------------------------------------- I/O

def lowest_scored(docs: Iterable[dict], count: int, seed: int = SEED) -> list[dict]:
    """The `count` documents with the lowest data.sample score of their _id (their position when they have
    none): a spread of the whole, the same every run."""
    from dragnet.data.sample import score

    keyed = ((score(str(d.get("_id") or f"#{i}"), seed), i, d) for i, d in enumerate(docs))
    return [d for _, _, d in heapq.nsmallest(count, keyed, key=lambda t: (t[0], t[1]))]


def _file_docs(path: Path) -> Iterable[dict]:
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def map_rows(design, docs: Sequence[dict], env: dict | None = None,
             container: str | None = None) -> dict[str, float]:
    """Rows each view of the design emits per document, mapped by a query server of its language: this
    machine's, or with `container` the CouchDB's container's own (qsbench.instructions.starter)."""
    from dragnet.qsbench import ddoc as qd
    from dragnet.qsbench import instructions
    from dragnet.qsbench import run as qsbench

    if not docs:
        return {}
    groups = qd.map_groups(design)
    start, name, _ = instructions.starter(design.language, design.doc["views"].get("lib"), groups, 30.0, env,
                                          container)
    ready = qsbench.prepare_docs([dict(d, _id=str(d.get("_id") or f"shape-{i}")) for i, d in enumerate(docs)],
                                 where="shape")
    qs = start()
    try:
        answers = [qs.prompt_raw(line) for line in ready.lines]
    finally:
        qs.close()
    rows = qd.group_rows(answers, ready.ids, len(groups), name)
    counts = [[len(rows[g][i][1]) for g in range(len(groups))] for i in range(len(ready.ids))]
    per_group = mean_rows(counts, [g.label for g in groups])
    return {v: per_group[g.label] for g in groups for v in g.views}


def data_shape(path: Path, design=None, count: int = SHAPE_DOCS, env: dict | None = None,
               container: str | None = None) -> Shape:
    """The sample file's shape: every document's size; `count` spread documents mapped."""
    sizes = []

    def sized():
        for d in _file_docs(path):
            sizes.append(doc_bytes(d))
            yield d
    picked = lowest_scored(sized(), count)
    return Shape(len(sizes), sum(sizes) / len(sizes) if sizes else None,
                 map_rows(design, picked, env, container) if design is not None else {},
                 f"{path.name}: every document's size, {len(picked):,} mapped")


def target_shape(spec: str, design=None, count: int = SHAPE_DOCS, env: dict | None = None,
                 container: str | None = None) -> Shape:
    """The target database's shape: `count` spread documents (qsbench.instructions' sample), sized and mapped."""
    from dragnet.couchdb.client import connect
    from dragnet.data.sample import split_db_url
    from dragnet.qsbench.instructions import sample_docs

    base, db = split_db_url(spec)
    got = sample_docs(connect(base, env=env), db, count=count, seed=SEED, max_bytes=1 << 62)
    docs = [json.loads(line)[1] for line in got.lines]
    sizes = [doc_bytes(d) for d in docs]
    return Shape(len(docs), sum(sizes) / len(sizes) if sizes else None,
                 map_rows(design, docs, env, container) if design is not None else {},
                 f"{len(docs):,} documents of the target, spread by their _id")


def check(data: Path, target: dict, design=None, target_spec: str | None = None, env: dict | None = None,
          goal: float = GOAL, container: str | None = None) -> dict:
    """The sample against the target before any build: both shapes, the warnings (compare) and what could not
    be checked and why (forecast.json's "sample_checks"). With `container` (the CouchDB's, when it runs in
    one) the rows are mapped by that container's own query server, as its builds map them."""
    from dragnet.errors import DragnetError
    from dragnet.qsbench.instructions import NoQueryServer

    out: dict = {"goal": goal, "sample": None, "target": None, "warnings": [],
                 "not_checked": unchecked(target, design is not None),
                 **({"container": container} if container else {})}
    try:
        sample = data_shape(data, design, env=env, container=container)
    except DragnetError as exc:      # no query server of the language here: sizes only
        why = (f"no {design.language} query server on this machine to map them with (a CouchDB release, "
               f"or DRAGNET_COUCHJS)" if isinstance(exc, NoQueryServer) and container is None
               else str(exc).splitlines()[0])
        out["not_checked"].append(f"rows per document of each view: {why}")
        design = None
        sample = data_shape(data, None, env=env)
    out["sample"] = sample.as_dict()
    if target_spec and (target.get("url") or target.get("db")):
        try:
            tshape = target_shape(target_spec, design, env=env, container=container)
        except DragnetError as exc:
            out["not_checked"].append(f"the target's documents ({exc})")
            return out
        out["target"] = tshape.as_dict()
        out["warnings"] = [{**w, "message": message(w, goal)} for w in compare(sample, tshape, goal)]
    elif target.get("doc_count") and (target.get("sizes") or {}).get("external"):
        # a known database without its documents: its mean size from GET /db (external bytes / documents)
        tshape = Shape(int(target["doc_count"]), target["sizes"]["external"] / int(target["doc_count"]), {},
                       "the target's sizes.external / doc_count")
        out["target"] = tshape.as_dict()
        out["warnings"] = [{**w, "message": message(w, goal)} for w in compare(sample, tshape, goal)]
    return out
