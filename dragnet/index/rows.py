"""A built index's rows, saved and compared across engines.

`dump` pages through every view of a design document (map rows with `reduce=false`, and for views with
a reduce the results at group_level 0, 1 and exact) into gzip JSON-lines files, one per query, so memory
stays flat whatever the index size. `compare_files` matches two such files by document id (map rows) or
by key (reduce rows) in a temporary SQLite file, and lists each difference with both values. Numbers are
equal when `values_equal` says so (engines format floats differently).
"""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from dragnet.couchdb.client import Couch

PAGE = 2000
# query name -> extra view parameters; "map" runs on every view, the others on views with a reduce
QUERIES = {
    "map": {"reduce": "false"},
    "group0": {"reduce": "true"},
    "group1": {"reduce": "true", "group_level": "1"},
    "exact": {"reduce": "true", "group": "true"},
}


# numbers equal to this relative tolerance are equal: JS and Python format floats differently
REL_TOL = 1e-9


def values_equal(a: Any, b: Any, rel: float = REL_TOL) -> bool:
    """JSON equality with numbers compared to a relative tolerance (JS and Python format floats differently)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k], rel) for k in a)
    return type(a) is type(b) and a == b


def _key_param(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def iter_rows(couch: Couch, view_path: str, params: dict, page: int = PAGE) -> Iterator[dict]:
    """Every row of one view query, `page` at a time (startkey/startkey_docid paging)."""
    extra: dict = {}
    while True:
        query = {**params, **extra, "limit": str(page + 1)}
        rows = couch.get(view_path, params=query, timeout=600)["rows"]
        yield from rows[:page]
        if len(rows) <= page:
            return
        nxt = rows[page]
        extra = {"startkey": _key_param(nxt["key"])}
        if "id" in nxt:
            extra["startkey_docid"] = nxt["id"]


def dump(couch: Couch, db_path: str, ddoc_id: str, views: dict, out_dir: Path) -> dict[str, str]:
    """Write every query of every view to out_dir/<view>.<query>.jsonl.gz; returns {"view.query": file}."""
    from urllib.parse import quote

    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    name = quote(ddoc_id[len("_design/"):], safe="")
    for view, definition in views.items():
        if view == "lib":
            continue
        queries = ["map"] + (["group0", "group1", "exact"] if definition.get("reduce") else [])
        for q in queries:
            path = out_dir / f"{view}.{q}.jsonl.gz"
            with gzip.open(path, "wt", encoding="utf-8") as fh:
                for row in iter_rows(couch, f"{db_path}/_design/{name}/_view/{quote(view, safe='')}", QUERIES[q]):
                    fh.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            files[f"{view}.{q}"] = str(path)
    return files


# ---------------------------------------------------------------- comparison (pure, on row streams)

@dataclass
class Difference:
    view: str           # "view.query"
    where: str          # the document id (map rows) or the reduce key
    reference: object   # the reference engine's rows for it (None: it has none)
    other: object


@dataclass
class Comparison:
    compared: int = 0                 # documents / reduce keys compared
    rows_reference: int = 0
    rows_other: int = 0
    differences: int = 0
    examples: list[Difference] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "examples"},
                "examples": [asdict(e) for e in self.examples]}


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def compare_rows(view: str, reference: Iterable[dict], other: Iterable[dict], *, by: str = "id",
                 max_examples: int = 20) -> Comparison:
    """Rows of one query from two engines, matched by document id (by="id": each doc's emitted
    (key, value) pairs as a multiset) or by key (by="key": one reduce value per key)."""
    out = Comparison()
    with tempfile.TemporaryDirectory(prefix="dragnet-rows-") as tmp:
        db = sqlite3.connect(str(Path(tmp) / "rows.sqlite"))
        try:
            db.execute("CREATE TABLE r (side INTEGER, k TEXT, row TEXT)")
            for side, rows in ((0, reference), (1, other)):
                batch = []
                for row in rows:
                    match = row["id"] if by == "id" else _canon(row["key"])
                    batch.append((side, match, json.dumps([row["key"], row["value"]], ensure_ascii=False)))
                    if len(batch) >= 5000:
                        db.executemany("INSERT INTO r VALUES (?, ?, ?)", batch)
                        batch.clear()
                db.executemany("INSERT INTO r VALUES (?, ?, ?)", batch)
                count = db.execute("SELECT COUNT(*) FROM r WHERE side = ?", (side,)).fetchone()[0]
                if side == 0:
                    out.rows_reference = count
                else:
                    out.rows_other = count
            db.execute("CREATE INDEX r_k ON r (k, side)")
            current, sides = None, ([], [])
            for side, k, row in db.execute("SELECT side, k, row FROM r ORDER BY k, side"):
                if k != current:
                    if current is not None:
                        _judge(out, view, current, sides, by, max_examples)
                    current, sides = k, ([], [])
                sides[side].append(json.loads(row))
            if current is not None:
                _judge(out, view, current, sides, by, max_examples)
        finally:
            db.close()
    return out


def same_rows(ref: list, other: list) -> bool:
    """Equal as multisets under values_equal (a doc's rows are few: pair them greedily)."""
    if len(ref) != len(other):
        return False
    remaining = list(other)
    for a in ref:
        hit = next((i for i, b in enumerate(remaining) if values_equal(a, b)), None)
        if hit is None:
            return False
        remaining.pop(hit)
    return True


def _judge(out: Comparison, view: str, k: str, sides: tuple[list, list], by: str, max_examples: int) -> None:
    out.compared += 1
    ref, oth = sides
    if same_rows(ref, oth):
        return
    out.differences += 1
    if len(out.examples) < max_examples:
        where = k if by == "id" else json.loads(k)
        out.examples.append(Difference(view=view, where=where, reference=ref or None, other=oth or None))


def read_rows(path: str | Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def compare_files(reference: dict[str, str], other: dict[str, str], *, max_examples: int = 20) -> dict:
    """Compare two engines' dumps (as returned by `dump`); {"queries": {...}, "differences": N, ...}."""
    queries: dict[str, dict] = {}
    total = 0
    for name in sorted(set(reference) | set(other)):
        if name not in reference or name not in other:
            queries[name] = {"missing_in": "reference" if name not in reference else "other", "differences": 1}
            total += 1
            continue
        by = "id" if name.endswith(".map") else "key"
        c = compare_rows(name, read_rows(reference[name]), read_rows(other[name]), by=by, max_examples=max_examples)
        queries[name] = c.as_dict()
        total += c.differences
    return {"differences": total, "queries": queries,
            "rows_compared": sum(q.get("rows_other", 0) for q in queries.values())}
