"""Copy a representative sample of a real database, to another database or a .jsonl.gz file.

How the sample is drawn: every document id gets a score, the first 8 bytes of
sha1("<seed>:<id>") read as a fraction in [0, 1). The score does not depend on where the id sorts,
so a sample is spread over the whole id space, and the same seed draws the same documents every time.
- `--fraction F`: a document is taken when its score < F (a Bernoulli draw per document, size ≈ F·n).
- `--count N`: a first pass over `_all_docs` (ids only) finds the N-th smallest score with a heap of
  N floats; the copy pass takes every document scoring at or below it: exactly N documents (bottom-k).

The copy pass pages through `_all_docs?include_docs=true` in id order, so memory stays flat (one page,
one output batch and a bounded size histogram) and the source's size distribution is measured on every
document, not guessed: the whole source is read once (twice with --count, the first time ids only).
Design documents are skipped (`_all_docs` never lists deleted ones); `_attachments` are dropped and counted.

To a database, documents go through `_bulk_docs` with `new_edits: false`, keeping `_id` and `_rev`;
`_revs_diff` first, so a re-run only sends what the target lacks. To a file, `_rev` is dropped, so that
`dragnet import` and `qsbench --docs` read it as fresh documents.
"""

from __future__ import annotations

import gzip
import hashlib
import heapq
import json
import math
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from dragnet.couchdb.client import Couch, CouchError, db_path
from dragnet.errors import UsageError

PAGE_SIZE = 1000
BATCH_SIZE = 500
MAX_BATCH_BYTES = 4 * 1024 * 1024  # as import's default: one _bulk_docs request stays modest
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


# ---------------------------------------------------------------------------------------------------
# Pure pieces: scores, selection, sizes.

def score(doc_id: str, seed: int) -> float:
    """The draw of doc_id for seed: uniform in [0, 1), independent of the id's sort position."""
    digest = hashlib.sha1(f"{seed}:{doc_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


def bottom_k_threshold(ids: Iterator[str], count: int, seed: int) -> tuple[float, int]:
    """(the count-th smallest score, number of ids seen); keeps only count floats in memory."""
    if count < 1:
        raise UsageError(f"--count must be at least 1, got {count}")
    heap: list[float] = []  # max-heap of the count smallest scores (negated)
    seen = 0
    for doc_id in ids:
        seen += 1
        s = score(doc_id, seed)
        if len(heap) < count:
            heapq.heappush(heap, -s)
        elif s < -heap[0]:
            heapq.heapreplace(heap, -s)
    return (-heap[0] if len(heap) == count else 1.0), seen


def selected(doc_id: str, seed: int, threshold: float, inclusive: bool) -> bool:
    s = score(doc_id, seed)
    return s <= threshold if inclusive else s < threshold


def split_db_url(spec: str) -> tuple[str, str]:
    """'http://u:p@host:5984/my%2Fdb' -> ('http://u:p@host:5984', 'my/db'); the db is the last path part."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    from dragnet.couchdb.client import mask_url

    parts = urlsplit(spec)
    path = parts.path.rstrip("/")
    if not parts.scheme or not parts.netloc or "/" not in path or not path.rsplit("/", 1)[1]:
        raise UsageError(f"not a database URL: {mask_url(spec)!r} (expected http://host:port/db)")
    base, db = path.rsplit("/", 1)
    return urlunsplit((parts.scheme, parts.netloc, base, "", "")), unquote(db)


def is_db_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def strip_doc(doc: dict, keep_rev: bool) -> tuple[dict, int]:
    """doc without _attachments (and _rev unless keep_rev); returns (doc, attachments dropped)."""
    attachments = doc.get("_attachments") or {}
    out = {k: v for k, v in doc.items() if k != "_attachments" and (keep_rev or k != "_rev")}
    return out, len(attachments)


EXACT_BELOW = 1024      # sizes under 1 KiB are counted exactly
BUCKET_RATIO = 1.01     # above, in buckets 1 % wide: percentiles within 1 %, memory bounded by the bucket count


def size_bucket(n: int) -> int:
    """Histogram key of a size: the size itself below EXACT_BELOW, else EXACT_BELOW + its 1 % bucket."""
    if n < EXACT_BELOW:
        return n
    return EXACT_BELOW + int(math.log(n / EXACT_BELOW, BUCKET_RATIO))


def bucket_value(key: int) -> float:
    """The size a bucket stands for: itself when exact, else its geometric middle."""
    if key < EXACT_BELOW:
        return float(key)
    return EXACT_BELOW * BUCKET_RATIO ** (key - EXACT_BELOW + 0.5)


@dataclass
class SizeDistribution:
    """Document sizes in bytes in fixed memory (a few thousand counters at most, whatever the number of
    documents): count, total, min and max are exact; percentiles are nearest-rank over the histogram,
    exact under 1 KiB and within 1 % above."""

    docs: int = 0
    bytes: int = 0
    min: int = 0
    max: int = 0
    buckets: dict = field(default_factory=dict)

    def add(self, n: int) -> None:
        self.min = n if not self.docs else min(self.min, n)
        self.docs += 1
        self.bytes += n
        self.max = max(self.max, n)
        k = size_bucket(n)
        self.buckets[k] = self.buckets.get(k, 0) + 1

    def percentile(self, p: float) -> float:
        """Nearest rank: the smallest size with at least p % of the documents at or below it."""
        if not self.docs:
            raise ValueError("percentile of no documents")
        rank = max(1, math.ceil(self.docs * p / 100))
        seen = 0
        for k in sorted(self.buckets):
            seen += self.buckets[k]
            if seen >= rank:
                return min(max(bucket_value(k), self.min), self.max)
        return float(self.max)

    def as_dict(self) -> dict:
        if not self.docs:
            return {"docs": 0, "bytes": 0}
        return {"docs": self.docs, "bytes": self.bytes, "mean": round(self.bytes / self.docs, 1),
                "p50": round(self.percentile(50)), "p90": round(self.percentile(90)),
                "p99": round(self.percentile(99)), "max": self.max}


@dataclass
class SampleSummary:
    source: str
    target: str
    seed: int
    method: str
    threshold: float
    source_docs: int = 0          # non-design documents seen in the copy pass
    design_docs_skipped: int = 0
    sampled: int = 0
    written: int = 0              # sent to the target in this run
    already_present: int = 0      # target already had this _id/_rev (a resumed run)
    attachments_dropped: int = 0
    docs_with_attachments: int = 0
    source_sizes: SizeDistribution = field(default_factory=SizeDistribution)
    sample_sizes: SizeDistribution = field(default_factory=SizeDistribution)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "seed": self.seed, "method": self.method,
                "threshold": self.threshold, "source_docs": self.source_docs,
                "design_docs_skipped": self.design_docs_skipped, "sampled": self.sampled,
                "written": self.written, "already_present": self.already_present,
                "attachments_dropped": self.attachments_dropped,
                "docs_with_attachments": self.docs_with_attachments,
                "sizes": {"source": self.source_sizes.as_dict(), "sample": self.sample_sizes.as_dict()},
                "seconds": round(self.seconds, 3)}


# ---------------------------------------------------------------------------------------------------
# I/O: paging the source, writing the target.

def all_docs_pages(couch: Couch, db: str, *, include_docs: bool, page_size: int = PAGE_SIZE) -> Iterator[list[dict]]:
    """_all_docs rows in id order, one page at a time (startkey + skip=1 paging)."""
    params: dict[str, Any] = {"limit": page_size, "include_docs": "true" if include_docs else "false"}
    start = None
    while True:
        q = dict(params)
        if start is not None:
            q.update(startkey=json.dumps(start), skip=1)
        rows = couch.get(f"{db_path(db)}/_all_docs", params=q).get("rows", [])
        if not rows:
            return
        yield rows
        if len(rows) < page_size:
            return
        start = rows[-1]["id"]


class DbTarget:
    """Writes batches with new_edits:false; _revs_diff first so a re-run sends only what is missing."""

    def __init__(self, couch: Couch, db: str):
        self.couch, self.db = couch, db
        try:
            couch.put(db_path(db), ok=(201, 202))
        except CouchError as exc:
            if exc.status != 412:  # 412: exists already (resume)
                raise

    def write(self, docs: list[dict]) -> tuple[int, int]:
        """(written, already present)."""
        wanted = {d["_id"]: [d["_rev"]] for d in docs}
        missing = self.couch.post(f"{db_path(self.db)}/_revs_diff", wanted)
        send = [d for d in docs if d["_id"] in missing]
        if send:
            answer = self.couch.post(f"{db_path(self.db)}/_bulk_docs", {"docs": send, "new_edits": False})
            errors = [r for r in answer if isinstance(r, dict) and r.get("error")]
            if errors:
                e = errors[0]
                raise CouchError("POST", f"{db_path(self.db)}/_bulk_docs", 201, str(e.get("error")),
                                 f"{len(errors)} documents refused, first {e.get('id')!r}: {e.get('reason')}")
        return len(send), len(docs) - len(send)

    def close(self) -> None:
        pass


class FileTarget:
    """A gzip'd JSON lines file, written to a temporary name and renamed when complete."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        try:
            self.fh = gzip.open(self.tmp, "wt", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def write(self, docs: list[dict]) -> tuple[int, int]:
        for d in docs:
            self.fh.write(_dumps(d) + "\n")
        return len(docs), 0

    def close(self) -> None:
        self.fh.close()
        self.tmp.replace(self.path)

    def abort(self) -> None:
        # a half-written file must not pass for a sample (qsbench's cache checks only that it exists)
        self.fh.close()
        self.tmp.unlink(missing_ok=True)


@dataclass
class Progress:
    phase: str      # "ids": the pass finding the --count threshold; "copy": the pass copying the sample
    seen: int       # documents (design ones included) read so far in this phase
    total: int      # the source's doc_count when it started
    sampled: int


def describe(count: int | None, fraction: float | None, seed: int) -> str:
    """How the sample is drawn, in one sentence for people."""
    how = (f"the {count:,} documents with the lowest sha1(seed:_id)" if count is not None
           else f"every document whose sha1(seed:_id) falls below {fraction:g}")
    return f"{how}, seed {seed}: spread over the whole id space, the same every run"


def draw_sample(couch: Couch, db: str, *, count: int | None = None, fraction: float | None = None,
                seed: int = 1, to_couch: Couch | None = None, to_db: str | None = None,
                to_file: str | Path | None = None, source_label: str = "", target_label: str = "",
                page_size: int = PAGE_SIZE, batch_size: int = BATCH_SIZE, max_batch_bytes: int = MAX_BATCH_BYTES,
                progress: Callable[[Progress], None] | None = None) -> SampleSummary:
    """Copy a sample of db (see the module docstring) to to_db on to_couch, or to to_file."""
    import time

    if (count is None) == (fraction is None):
        raise UsageError("give exactly one of --count N and --fraction F")
    if count is not None and count < 1:
        raise UsageError(f"--count must be at least 1, got {count}")
    if fraction is not None and not 0 < fraction <= 1:
        raise UsageError(f"--fraction must be in (0, 1], got {fraction}")
    if (to_file is None) == (to_db is None):
        raise UsageError("give exactly one target: a database (URL/db) or a FILE.jsonl.gz")
    if to_db is not None and to_db == db and (to_couch is None or to_couch.url == couch.url):
        raise UsageError(f"--to is the source database {db!r} itself")
    started = time.monotonic()
    try:
        total = int(couch.get(db_path(db)).get("doc_count", 0))
    except CouchError as exc:
        if exc.status == 404:
            raise UsageError(f"--from: no database {db!r} at {couch.url}") from None
        raise
    if count is not None:
        def ids() -> Iterator[str]:
            seen = 0
            for rows in all_docs_pages(couch, db, include_docs=False, page_size=page_size):
                for row in rows:
                    if not row["id"].startswith("_design/"):
                        yield row["id"]
                seen += len(rows)
                if progress is not None:
                    progress(Progress("ids", seen, total, 0))
        threshold, _ = bottom_k_threshold(ids(), count, seed)
        inclusive = True
    else:
        threshold, inclusive = fraction, False
    summary = SampleSummary(source=source_label or db, target=target_label or str(to_file or to_db),
                            seed=seed, method=describe(count, fraction, seed), threshold=threshold)
    keep_rev = to_db is not None
    target = DbTarget(to_couch or couch, to_db) if to_db is not None else FileTarget(to_file)
    batch: list[dict] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch_bytes
        if batch:
            w, p = target.write(batch)
            summary.written += w
            summary.already_present += p
            batch.clear()
            batch_bytes = 0

    try:
        seen = 0
        for rows in all_docs_pages(couch, db, include_docs=True, page_size=page_size):
            seen += len(rows)
            for row in rows:
                doc = row.get("doc")
                if row["id"].startswith("_design/"):
                    summary.design_docs_skipped += 1
                    continue
                if not isinstance(doc, dict):  # deleted between listing and reading
                    continue
                summary.source_docs += 1
                # measured as stored (with _id and _rev, without attachments), the same for either target
                stored, dropped = strip_doc(doc, keep_rev=True)
                size = len(_dumps(stored).encode("utf-8"))
                summary.source_sizes.add(size)
                if not selected(row["id"], seed, threshold, inclusive):
                    continue
                summary.sampled += 1
                summary.sample_sizes.add(size)
                summary.attachments_dropped += dropped
                summary.docs_with_attachments += bool(dropped)
                batch.append(stored if keep_rev else strip_doc(stored, keep_rev=False)[0])
                batch_bytes += size
                if len(batch) >= batch_size or batch_bytes >= max_batch_bytes:
                    flush()
            if progress is not None:
                progress(Progress("copy", seen, total, summary.sampled))
        flush()
    except BaseException:
        if isinstance(target, FileTarget):
            target.abort()
        raise
    target.close()
    summary.seconds = time.monotonic() - started
    return summary


def cache_path(spec: str, *, count: int | None, fraction: float | None, seed: int,
               cache_dir: str | Path = "cache") -> Path:
    """Where a sample of spec (URL/db) is cached: keyed by the URL without credentials, db, size and seed."""
    from dragnet.couchdb.client import split_credentials

    url, db = split_db_url(spec)
    clean, _, _ = split_credentials(url)
    size = f"n{count}" if count is not None else f"f{fraction}"
    key = hashlib.sha1(json.dumps([clean, db, size, seed]).encode("utf-8")).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in db)[:40]
    return Path(cache_dir) / f"sample-{safe}-{size}-seed{seed}-{key}.jsonl.gz"


def cached_sample(spec: str, *, count: int | None, fraction: float | None, seed: int,
                  cache_dir: str | Path = "cache",
                  progress: Callable[[Progress], None] | None = None) -> tuple[Path, SampleSummary | None]:
    """The cached sample file of spec, drawn now unless present; (path, summary or None when cached)."""
    from dragnet.couchdb.client import connect, mask_url

    path = cache_path(spec, count=count, fraction=fraction, seed=seed, cache_dir=cache_dir)
    if path.is_file():
        return path, None
    path.parent.mkdir(parents=True, exist_ok=True)
    url, db = split_db_url(spec)
    summary = draw_sample(connect(url), db, count=count, fraction=fraction, seed=seed, to_file=path,
                          source_label=mask_url(spec), target_label=str(path), progress=progress)
    return path, summary


# ---------------------------------------------------------------------------------------------------
# Nested spread samples of a JSON-lines file (a forecast's sweep sizes).

SPREAD_SEED = 1          # fixed: the same data gives the same sweep on another day
_ID = re.compile(rb'"_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def line_key(line: bytes, index: int) -> str:
    """What a data line is drawn by: its `_id` (as `dragnet sample` draws a database), or its position in
    the file ("#<index>") when it has none (CouchDB gives it a random id on import)."""
    m = _ID.search(line)
    if m:
        try:
            return json.loads(b'"' + m.group(1) + b'"')
        except ValueError:
            pass
    return f"#{index}"


def spread_thresholds(scores: Sequence[float], counts: Sequence[int]) -> dict[int, float]:
    """count -> the count-th smallest score: the sample of `count` is every line scoring at or below it.

    The samples are nested (the smaller one is the lowest-scoring part of the larger one), each spread over
    the whole file; pure, so tested without a file."""
    need = max(counts)
    if need > len(scores):
        raise UsageError(f"a spread sample of {need:,} documents from {len(scores):,}")
    low = heapq.nsmallest(need, scores)
    return {n: low[n - 1] for n in counts}


def _lines(path: Path):
    with (gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")) as fh:
        for line in fh:
            if line.strip():
                yield line if line.endswith(b"\n") else line + b"\n"


def write_nested(source: str | Path, counts: Sequence[int], folder: str | Path, name: Callable[[int], str],
                 mark: dict, pick: Callable[[Path, list[int]], Iterable[tuple[bytes, int]]]) -> dict[int, Path]:
    """count -> a gzip file of the documents `pick` gives (each line with the rank that decides which sizes hold
    it: a line goes into every size n with rank <= n), nested, in the file's own order.

    Written with mtime 0, so the same source gives byte-identical files (the import marker, keyed on the file's
    sha256, recognises a database an earlier sweep filled); files written whole from this very source file and
    mark are kept (100,000 documents of ~100 KB took minutes)."""
    counts = sorted(set(counts))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    src = Path(source)
    outs = {n: folder / name(n) for n in counts}
    st = src.stat()
    mark = {"source": str(src.resolve()), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns, **mark}
    done = folder / "nested-written.json"
    try:
        known = json.loads(done.read_text())
    except (OSError, ValueError):
        known = {}
    if all(known.get(p.name) == mark and p.is_file() for p in outs.values()):
        return outs
    lines = pick(src, counts)      # may refuse (too few documents) before any file is opened
    names = {p.name for p in outs.values()}
    known = {k: v for k, v in known.items() if k not in names}
    done.write_text(json.dumps(known))     # an interrupted write leaves no file marked whole
    handles = {n: gzip.GzipFile(filename="", mode="wb", fileobj=open(p, "wb"), mtime=0, compresslevel=1)
               for n, p in outs.items()}
    try:
        for line, rank in lines:
            for n, h in handles.items():
                if rank <= n:
                    h.write(line)
    finally:
        for h in handles.values():
            raw = h.fileobj
            h.close()
            raw.close()
    done.write_text(json.dumps({**known, **{name: mark for name in names}}))
    return outs


def write_spread(source: str | Path, counts: Sequence[int], folder: str | Path,
                 seed: int = SPREAD_SEED) -> dict[int, Path]:
    """count -> a file of `count` documents of source drawn by score(line_key, seed), nested and spread over the
    whole file, in the file's own order. Two passes (scores, then the copy), so memory holds one float a line."""

    def pick(src: Path, counts: list[int]) -> Iterable[tuple[bytes, int]]:
        scores = array("d", (score(line_key(line, i), seed) for i, line in enumerate(_lines(src))))
        if counts[-1] > len(scores):
            raise UsageError(f"--data {src}: {len(scores):,} documents, fewer than the largest size {counts[-1]:,}")
        cut = spread_thresholds(scores, counts)
        # the rank of a line: the smallest size whose threshold takes it (past the largest: none)
        order = sorted(counts)
        return ((line, next((n for n in order if sc <= cut[n]), order[-1] + 1))
                for sc, line in zip(scores, _lines(src)))

    return write_nested(source, counts, folder, lambda n: f"spread-{n}-seed{seed}.jsonl.gz", {"seed": seed}, pick)


def write_prefixes(source: str | Path, counts: Sequence[int], folder: str | Path) -> dict[int, Path]:
    """count -> a file holding the first `count` documents of source, one pass over it."""

    def pick(src: Path, counts: list[int]) -> Iterable[tuple[bytes, int]]:
        n = 0
        for n, line in enumerate(_lines(src), 1):
            if n > counts[-1]:
                return
            yield line, n
        if n < counts[-1]:
            raise UsageError(f"--data {src}: {n} documents, fewer than the largest size {counts[-1]}")

    return write_nested(source, counts, folder, lambda n: f"prefix-{n}.jsonl.gz", {}, pick)


def spread_describe(seed: int = SPREAD_SEED) -> str:
    return (f"each size the documents with the lowest sha1(seed:_id), seed {seed}: nested, spread over the whole "
            f"data, the same every run")
