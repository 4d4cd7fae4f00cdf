"""Stream declarations into CouchDB through `_bulk_docs`, accounting for every input record.

    read = imported + existing + rejected

- imported: CouchDB stored the document in this run;
- existing: CouchDB answered `conflict` and the document id is in the database (an earlier run, or a
  duplicate id earlier in the input);
- rejected: could not be loaded; each one is a line in the rejects file
  `{"source": "file:line", "reason": ..., "doc_id": ...}` (malformed JSON, not an object, bad `_id`,
  larger than CouchDB's max_document_size, or refused by CouchDB with its reason).

Documents without `_id` get a deterministic one, so re-running an import adds nothing: `nacp_<uuid>` when
the record carries a NACP declaration id (`id` of the dump wrapper), else `sha1_<hex>` of the document's
canonical JSON (sorted keys, compact separators).

The reader runs in the calling thread; `concurrency` worker threads post batches taken from a bounded
queue, so memory stays flat: at most 2 × concurrency + 1 batches of ≤ max_batch_bytes exist at a time.
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from requests.adapters import HTTPAdapter

from data_prep.nacp import Malformed, Source, TruncatedInput

from dragnet.couchdb.client import Couch, CouchError, CouchUnreachable, db_path
from dragnet.errors import DragnetError

DEFAULT_MAX_DOCUMENT_SIZE = 8_000_000
DEFAULT_BATCH_SIZE = 500
DEFAULT_MAX_BATCH_BYTES = 4 * 1024 * 1024
_ANY_STATUS = tuple(range(100, 600))
_UUID = re.compile(r"^(?:nacp_)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


class ImportAborted(DragnetError):
    """CouchDB stayed unreachable or refused the whole import; `summary` holds the counts so far."""

    def __init__(self, message: str, summary: "ImportSummary"):
        super().__init__(message)
        self.summary = summary


# ---------------------------------------------------------------------------------------------------
# Pure pieces: options, documents, batches, answers, retries.

@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for transient failures (no answer, 5xx, 429)."""

    attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 20.0

    def delays(self) -> list[float]:
        """Sleep before attempt 2, 3, …: base, 2·base, 4·base … capped at max_delay."""
        return [min(self.max_delay, self.base_delay * 2 ** i) for i in range(max(0, self.attempts - 1))]


def is_transient(status: int) -> bool:
    return status == 429 or status >= 500


@dataclass
class ImportOptions:
    q: int | None = None
    n: int | None = None     # replicas (a cluster's n); CouchDB's default when None
    purge: bool = False
    concurrency: int = 4
    batch_size: int = DEFAULT_BATCH_SIZE
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    normalise: bool = False
    compact_id: bool = False
    rejects_path: str | None = None
    max_document_size: int | None = None   # None: ask CouchDB, else DEFAULT_MAX_DOCUMENT_SIZE
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    create_db: bool = True


@dataclass(frozen=True)
class Prepared:
    """A document ready to post: its serialised JSON (UTF-8)."""

    location: str
    doc_id: str
    body: bytes


@dataclass(frozen=True)
class Rejected:
    location: str
    reason: str
    doc_id: Any = None

    def as_dict(self) -> dict:
        return {"source": self.location, "reason": self.reason, "doc_id": self.doc_id}


def id_problem(doc_id: Any) -> str | None:
    """Why doc_id cannot be a CouchDB document id, or None when it can."""
    if not isinstance(doc_id, str):
        return f"_id must be a string, not {type(doc_id).__name__}"
    if not doc_id:
        return "_id is empty"
    if doc_id.startswith("_") and not doc_id.startswith(("_design/", "_local/")):
        return "_id starts with '_' (reserved by CouchDB)"
    return None


def derived_id(doc: dict) -> str:
    """The deterministic _id of a document that has none (see the module docstring)."""
    raw = doc.get("id")
    if isinstance(raw, str):
        m = _UUID.match(raw)
        if m:
            return f"nacp_{m.group(1).lower()}"
    canonical = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha1_" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


# parsing is most of the importer's CPU; orjson (a requirement) takes less than half the time of json
from orjson import loads as _fast_loads  # noqa: E402

# pysimdjson (a requirement) validates a declaration line in a quarter of orjson's CPU: it builds no objects
import simdjson as _simdjson  # noqa: E402

_NOT_PARSED = object()
_local = threading.local()   # a simdjson parser per thread (a parser holds one document at a time)


def passthrough_id(line: bytes) -> str | None:
    """The _id of a JSON line that is certainly a valid object with exactly one valid string _id, so the
    line can be posted as read; None when unsure (malformed, no or duplicate _id, a bad _id …): then the
    full parse decides and words the reason."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = _simdjson.Parser()
    try:
        doc = parser.parse(line)
    except Exception:  # any refusal (syntax, UTF-8, depth, big integers …) goes to the full parse
        return None
    try:
        # duplicate keys: orjson keeps the last _id, simdjson's lookup the first
        if not isinstance(doc, _simdjson.Object) or sum(k == "_id" for k in doc.keys()) != 1:
            return None
        doc_id = doc["_id"]
        if not isinstance(doc_id, str):
            return None
    finally:
        del doc  # the parser refuses the next line while proxies of this one live
    return doc_id if id_problem(doc_id) is None else None


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def prepare(location: str, raw: Any, *, normalise: bool = False, compact_id: bool = False,
            max_document_size: int = DEFAULT_MAX_DOCUMENT_SIZE) -> Prepared | Rejected:
    """One input record (JSON line bytes, parsed value or Malformed) -> a document to post, or why not."""
    if isinstance(raw, Malformed):
        return Rejected(location, raw.reason)
    if isinstance(raw, bytes) and not normalise:
        doc_id = passthrough_id(raw)
        if doc_id is not None:  # valid as it is: post the bytes read, no parse and re-serialisation
            return _sized(Prepared(location, doc_id, _encode(raw)), max_document_size)
    text = None
    if isinstance(raw, (bytes, str)):
        text = raw
        try:
            raw = _fast_loads(raw)
        except ValueError:  # let the standard parser decide and explain (orjson refuses e.g. huge integers)
            raw = _NOT_PARSED
    if raw is _NOT_PARSED:
        try:
            raw = json.loads(text, parse_constant=_no_constant)
        except UnicodeDecodeError as exc:
            return Rejected(location, f"not UTF-8: {exc.reason} at byte {exc.start}")
        except json.JSONDecodeError as exc:
            return Rejected(location, f"invalid JSON: {exc.msg} at column {exc.colno}")
        except ValueError as exc:  # NaN / Infinity: Python reads them, CouchDB does not
            return Rejected(location, f"invalid JSON: {exc}")
        except RecursionError:  # deeper than orjson's 1024 levels: one reject, not the end of the import
            return Rejected(location, "invalid JSON: nested too deeply")
    if not isinstance(raw, dict):
        return Rejected(location, f"not a JSON object (got {_json_type(raw)})")
    doc = raw
    if normalise:
        from data_prep.normalise import normalise as normalise_doc

        doc = normalise_doc(doc, compact_id=compact_id)
        text = None
    try:
        if "_id" in doc:
            problem = id_problem(doc["_id"])
            if problem:
                return Rejected(location, problem, _printable_id(doc["_id"]))
            doc_id = doc["_id"]
            body = _encode(text) if text is not None else _dumps(doc).encode("utf-8")
        else:
            doc_id = derived_id(doc)
            prefix = '{"_id":' + json.dumps(doc_id) + ("," if doc else "")
            # Splice the id into the original text instead of serialising the document again.
            rest = _encode(text).lstrip()[1:] if text is not None else _dumps(doc).encode("utf-8")[1:]
            body = prefix.encode() + rest
    except ValueError as exc:  # NaN / Infinity in a parsed value
        return Rejected(location, f"invalid JSON: {exc}", _printable_id(doc.get("_id")))
    return _sized(Prepared(location, doc_id, body), max_document_size)


def _sized(doc: Prepared, limit: int) -> Prepared | Rejected:
    if len(doc.body) > limit:
        return Rejected(doc.location, f"too large: {len(doc.body)} bytes > max_document_size {limit}", doc.doc_id)
    return doc


def _encode(text: bytes | str) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text.strip()


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _printable_id(doc_id: Any) -> Any:
    return doc_id if isinstance(doc_id, (str, int, float, bool)) or doc_id is None else json.dumps(doc_id)[:100]


class Batcher:
    """Groups documents into batches of at most max_docs documents and max_bytes request bytes.

    A document larger than max_bytes travels alone. `add` returns the batch completed by adding (or None).
    """

    OVERHEAD = len(b'{"docs":[]}')

    def __init__(self, max_docs: int, max_bytes: int):
        if max_docs < 1 or max_bytes < 1:
            raise ValueError("batch limits must be positive")
        self.max_docs, self.max_bytes = max_docs, max_bytes
        self._docs: list[Prepared] = []
        self._bytes = self.OVERHEAD

    def add(self, doc: Prepared) -> list[Prepared] | None:
        out = None
        size = len(doc.body) + 1
        if self._docs and self._bytes + size > self.max_bytes:
            out = self.flush()
        self._docs.append(doc)
        self._bytes += size
        if len(self._docs) >= self.max_docs:  # (count can only be reached when nothing was flushed above)
            out = self.flush()
        return out

    def flush(self) -> list[Prepared] | None:
        docs, self._docs, self._bytes = self._docs, [], self.OVERHEAD
        return docs or None


def batches(docs: Iterable[Prepared], max_docs: int, max_bytes: int) -> Iterator[list[Prepared]]:
    b = Batcher(max_docs, max_bytes)
    for d in docs:
        out = b.add(d)
        if out:
            yield out
    last = b.flush()
    if last:
        yield last


def request_body(batch: list[Prepared]) -> bytes:
    if not batch:
        return b'{"docs":[]}'
    # one join, no `prefix + joined + suffix`: each concatenation copied the whole (MBs) body again, and
    # those copies into fresh memory cost more CPU than reading and validating the documents
    parts = [d.body for d in batch]
    parts[0] = b'{"docs":[' + parts[0]
    parts[-1] += b"]}"
    return b",".join(parts)


@dataclass
class BatchOutcome:
    imported: list[Prepared] = field(default_factory=list)
    conflicts: list[Prepared] = field(default_factory=list)   # to check: existing or rejected
    rejected: list[tuple[Prepared, str]] = field(default_factory=list)


def classify_bulk_answer(batch: list[Prepared], answer: Any) -> BatchOutcome:
    """Sort the documents of a batch by CouchDB's per-document `_bulk_docs` answer."""
    out = BatchOutcome()
    if not isinstance(answer, list):
        for d in batch:
            out.rejected.append((d, f"unexpected _bulk_docs answer: {str(answer)[:100]}"))
        return out
    if len(answer) == len(batch) and all(isinstance(a, dict) and a.get("id") == d.doc_id
                                         for a, d in zip(answer, batch)):
        pairs = list(zip(batch, answer))
    else:  # fall back to matching by id
        by_id: dict[str, list[dict]] = {}
        for a in answer:
            if isinstance(a, dict):
                by_id.setdefault(str(a.get("id")), []).append(a)
        pairs = [(d, (by_id.get(d.doc_id) or [{}]).pop(0) if by_id.get(d.doc_id) else {}) for d in batch]
    for d, a in pairs:
        if a.get("ok") or ("rev" in a and "error" not in a):
            out.imported.append(d)
        elif a.get("error") == "conflict":
            out.conflicts.append(d)
        elif a.get("error"):
            reason = f"{a['error']}: {a['reason']}" if a.get("reason") else str(a["error"])
            out.rejected.append((d, reason))
        else:
            out.rejected.append((d, "no answer from CouchDB for this document"))
    return out


# ---------------------------------------------------------------------------------------------------
# Results.

@dataclass
class ImportSummary:
    source: str
    db: str
    read: int = 0
    imported: int = 0
    existing: int = 0
    rejected: int = 0
    bytes: int = 0               # serialised bytes of the documents posted (each once)
    seconds: float = 0.0
    requests: int = 0            # _bulk_docs requests, retries and splits included
    retries: int = 0
    rejects_file: str | None = None
    reasons: dict[str, int] = field(default_factory=dict)  # rejected count per reason (first words)
    completed: bool = True

    @property
    def docs_per_sec(self) -> float:
        return self.read / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_sec(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["docs_per_sec"] = round(self.docs_per_sec, 1)
        d["bytes_per_sec"] = round(self.bytes_per_sec, 1)
        return d


@dataclass(frozen=True)
class Progress:
    read: int
    imported: int
    existing: int
    rejected: int
    bytes: int
    position: int        # bytes of the input consumed (compressed bytes for .gz)
    total: int           # size of the input
    seconds: float


# ---------------------------------------------------------------------------------------------------
# CouchDB side.

def max_document_size(couch: Couch) -> int:
    """CouchDB's couchdb/max_document_size when the config is readable (admins), else the default 8 MB."""
    try:
        value = couch.get("/_node/_local/_config/couchdb/max_document_size")
        return int(value)
    except (CouchError, CouchUnreachable, ValueError, TypeError):
        return DEFAULT_MAX_DOCUMENT_SIZE


def ensure_db(couch: Couch, db: str, *, q: int | None = None, n: int | None = None, purge: bool = False) -> bool:
    """Create db (with q shards, n replicas when given); purge deletes it first. True when it was created now."""
    path = db_path(db)
    if purge:
        couch.request("DELETE", path, ok=(200, 202, 404))
    params = {k: str(v) for k, v in (("q", q), ("n", n)) if v} or None
    resp = couch.request("PUT", path, params=params, ok=(201, 202, 412))
    return resp.status_code != 412


class _Sender:
    """Posts batches with retries; splits batches CouchDB refuses as a whole (413, 400)."""

    def __init__(self, couch: Couch, db: str, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep):
        self.couch, self.db, self.policy, self.sleep = couch, db, policy, sleep
        self.path = db_path(db) + "/_bulk_docs"
        self.requests = self.retries = 0
        self.lock = threading.Lock()

    def _post(self, path: str, body: bytes):
        delays = self.policy.delays()
        attempt = 0
        while True:
            attempt += 1
            with self.lock:
                self.requests += 1
            try:
                resp = self.couch.request("POST", path, data=body, ok=_ANY_STATUS,
                                          headers={"Content-Type": "application/json"})
                if not is_transient(resp.status_code):
                    return resp
                problem = f"HTTP {resp.status_code}"
                retry_after = _retry_after(resp)
            except CouchUnreachable as exc:
                problem, retry_after = str(exc).rsplit("(", 1)[-1].rstrip(")"), 0.0
            if attempt > len(delays):
                raise _GiveUp(f"{problem} after {attempt} attempts")
            with self.lock:
                self.retries += 1
            self.sleep(max(delays[attempt - 1], min(retry_after, self.policy.max_delay)))

    def send(self, batch: list[Prepared]) -> BatchOutcome:
        resp = self._post(self.path, request_body(batch))
        status = resp.status_code
        if status in (200, 201, 202):
            out = classify_bulk_answer(batch, _json(resp))
            if out.conflicts:
                self._check_conflicts(out)
            return out
        if status in (400, 413):
            reason = _reason(resp)
            if len(batch) == 1:
                out = BatchOutcome()
                out.rejected.append((batch[0], reason))
                return out
            half = len(batch) // 2
            a, b = self.send(batch[:half]), self.send(batch[half:])
            return BatchOutcome(a.imported + b.imported, a.conflicts + b.conflicts, a.rejected + b.rejected)
        raise _Fatal(f"CouchDB answered {status} to POST {self.path}: {_reason(resp)}")

    def _check_conflicts(self, out: BatchOutcome) -> None:
        """A conflict means 'already there' only if the id exists (not deleted) in the database."""
        keys = [d.doc_id for d in out.conflicts if not d.doc_id.startswith("_local/")]
        present: set[str] = set()
        if keys:
            resp = self._post(db_path(self.db) + "/_all_docs", json.dumps({"keys": keys}).encode("utf-8"))
            if resp.status_code != 200:
                raise _Fatal(f"CouchDB answered {resp.status_code} to POST _all_docs: {_reason(resp)}")
            for row in _json(resp).get("rows", []):
                value = row.get("value")
                if isinstance(value, dict) and not value.get("deleted") and "id" in row:
                    present.add(row["id"])
        conflicts, out.conflicts = out.conflicts, []
        for d in conflicts:
            if d.doc_id in present:
                out.conflicts.append(d)
            else:
                out.rejected.append((d, "conflict: document update conflict"))


class _GiveUp(Exception):
    pass


class _Fatal(Exception):
    pass


def _json(resp) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def _reason(resp) -> str:
    body = _json(resp)
    if isinstance(body, dict) and body.get("error"):
        return f"{body['error']}: {body['reason']}" if body.get("reason") else str(body["error"])
    return f"HTTP {resp.status_code}"


def _retry_after(resp, now: Callable[[], float] = time.time) -> float:
    """Seconds the server asks to wait: Retry-After is either delta-seconds or an HTTP-date (RFC 9110)."""
    value = (resp.headers.get("Retry-After") or "").strip()
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now())
    except (TypeError, ValueError, IndexError):
        return 0.0


class _Rejects:
    """The rejects file, opened on the first reject (thread-safe)."""

    def __init__(self, path: str | None):
        self.path = path
        self._fh = None
        self._lock = threading.Lock()
        if path and Path(path).exists():
            Path(path).unlink()  # a stale file from an earlier run would be misleading

    def write(self, rejects: list[Rejected]) -> None:
        if not self.path or not rejects:
            return
        with self._lock:
            if self._fh is None:
                self._fh = open(self.path, "w", encoding="utf-8")
            for r in rejects:
                self._fh.write(json.dumps(r.as_dict(), ensure_ascii=False) + "\n")
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def import_documents(couch: Couch, db: str, source: Any, options: ImportOptions | None = None, *,
                     progress: Callable[[Progress], None] | None = None) -> ImportSummary:
    """Load every record of source (a data_prep.nacp.Source, a path, or an iterable of
    (location, raw) records) into db. Raises ImportAborted when CouchDB stays down or refuses the import."""
    options = options or ImportOptions()
    if options.concurrency < 1:
        raise DragnetError("concurrency must be at least 1")
    if isinstance(source, (str, Path)):
        source = Source(source)
    records = source.records() if isinstance(source, Source) else iter(source)
    position = source.position if isinstance(source, Source) else (lambda: 0)
    total = source.total if isinstance(source, Source) else 0
    name = str(source.path) if isinstance(source, Source) else "<records>"

    couch.session.mount(couch.url, HTTPAdapter(pool_connections=1, pool_maxsize=max(10, options.concurrency + 2)))
    summary = ImportSummary(source=name, db=db, rejects_file=options.rejects_path)
    started = time.monotonic()
    try:
        if options.create_db or options.purge:
            ensure_db(couch, db, q=options.q, n=options.n, purge=options.purge)
        limit = options.max_document_size or max_document_size(couch)
    except CouchUnreachable as exc:
        raise ImportAborted(str(exc), summary) from None

    sender = _Sender(couch, db, options.retry)
    rejects = _Rejects(options.rejects_path)
    lock = threading.Lock()
    work: queue.Queue = queue.Queue(maxsize=options.concurrency)
    failure: list[str] = []

    def reject(items: list[Rejected]) -> None:
        rejects.write(items)
        with lock:
            summary.rejected += len(items)
            for r in items:
                key = r.reason.split(":", 1)[0]
                summary.reasons[key] = summary.reasons.get(key, 0) + 1

    def worker() -> None:
        while (batch := work.get()) is not None:
            if failure:
                continue  # drain: the run is stopping
            try:
                out = sender.send(batch)
            except (_GiveUp, _Fatal) as exc:
                failure.append(str(exc))
                continue
            except Exception as exc:  # report instead of hanging the reader
                failure.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                summary.imported += len(out.imported)
                summary.existing += len(out.conflicts)
                summary.bytes += sum(len(d.body) for d in batch)
            reject([Rejected(d.location, reason, d.doc_id) for d, reason in out.rejected])

    threads = [threading.Thread(target=worker, name=f"dragnet-import-{i}", daemon=True)
               for i in range(options.concurrency)]
    for t in threads:
        t.start()

    def snapshot() -> Progress:
        with lock:
            return Progress(summary.read, summary.imported, summary.existing, summary.rejected, summary.bytes,
                            position(), total, time.monotonic() - started)

    def put(batch: list[Prepared]) -> None:
        while not failure:
            try:
                work.put(batch, timeout=0.2)
                return
            except queue.Full:
                if progress is not None:
                    progress(snapshot())

    batcher = Batcher(options.batch_size, options.max_batch_bytes)
    last_report = 0.0
    truncated: str | None = None
    try:
        try:
            for location, raw in records:
                if failure:
                    break
                with lock:
                    summary.read += 1
                item = prepare(location, raw, normalise=options.normalise, compact_id=options.compact_id,
                               max_document_size=limit)
                if isinstance(item, Rejected):
                    reject([item])
                else:
                    full = batcher.add(item)
                    if full:
                        put(full)
                if progress is not None and (now := time.monotonic()) - last_report > 0.2:
                    last_report = now
                    progress(snapshot())
        except TruncatedInput as exc:
            truncated = str(exc)    # what was read before the cut is still sent and counted
        last = batcher.flush()
        if last and not failure:
            put(last)
    except BaseException:  # Ctrl-C or a reader error: workers drop queued batches instead of posting them
        failure.append("interrupted")
        raise
    finally:
        for _ in threads:
            work.put(None)
        for t in threads:
            t.join()
        rejects.close()
        summary.seconds = time.monotonic() - started
        summary.requests, summary.retries = sender.requests, sender.retries
        if not summary.rejected:
            summary.rejects_file = None
    if progress is not None:
        progress(snapshot())
    counts = (f"read {summary.read:,}, imported {summary.imported:,}, existing {summary.existing:,}, "
              f"rejected {summary.rejected:,}")
    if failure:
        summary.completed = False
        raise ImportAborted(f"import into {db} stopped: CouchDB at {couch.url}: {failure[0]}; {counts} so far; "
                            f"re-run the same command to resume (loaded documents count as existing)", summary)
    if truncated is not None:
        summary.completed = False
        raise ImportAborted(f"{truncated}; {counts}", summary)
    return summary

