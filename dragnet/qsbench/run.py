"""Query servers compared over the real protocol, with no CouchDB.

For each server, every run spawns the real process and replays what CouchDB 3.5 does while indexing one
shard (couch_query_servers:start_doc_map/3, map_doc_raw/2, couch_os_process): `["reset", config]`,
`["add_lib", lib]` when the design doc has `views.lib`, one `["add_fun", source]` per view, then one
`["map_doc", doc]` per document, each answered before the next is sent; then `reduce`/`rereduce` when the
view has a JavaScript/Python reduce (built-ins like `_sum` run inside CouchDB and cost the server nothing).
With `shards` > 1, that many processes run in parallel over a contiguous split of the documents.

The map_doc lines are encoded once before timing; answers are kept as raw bytes and parsed only after
the run, to check them against the reference server. Everything here except the process driving is pure
arithmetic over the recorded samples, so the table can be recomputed from a results file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from data_prep.nacp import Malformed, Source

from dragnet.servers import registry as qs_registry
from dragnet.measure import decide as decide
from dragnet.measure import stats as stats
from dragnet.results.schema import QSBENCH, schema
from dragnet.results.schema import QsbenchRun as Run, ShardRun
from dragnet.results.schema import write as write_results_file
from dragnet.errors import UsageError
from dragnet.measure.cpu import schedstat_of
from dragnet.measure.machine import machine_info
from dragnet.index.rows import REL_TOL, values_equal
from dragnet.servers.protocol import RESET_CONFIG, ProtocolError, QueryServerProcess, encode
from dragnet.servers import dialects
from dragnet.servers.discovery import ServerSpec, Skipped
from dragnet.qsbench.driver import map_loop, resolve as resolve_driver

SCHEMA = schema(QSBENCH)
RESET_LINE = encode(["reset", RESET_CONFIG])
# rows per `reduce` call; CouchDB reduces per B-tree node, a few hundred rows at most for small values
REDUCE_BATCH = 200

Progress = Callable[..., None]


# -- inputs -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ViewCode:
    """The function(s) one server runs: a view folder's file for its dialect."""

    name: str
    dialect: str
    map_path: str
    map_source: str
    reduce_source: str | None = None
    lib: dict | None = None

    @property
    def os_reduce(self) -> bool:
        """A reduce the query server computes (built-ins start with `_` and run inside CouchDB)."""
        return bool(self.reduce_source) and not self.reduce_source.strip().startswith("_")


def load_view(view_dir: str | os.PathLike, dialect: str) -> ViewCode:
    """The map (and reduce, when the folder has one) of `view_dir` in `dialect`.

    The map is the folder's file for the dialect (dragnet.servers.dialects); a reduce is `reduce.js` next to `map.js`
    (`reduce.py` next to `map.py`, …) or a file named `reduce` holding a built-in such as `_sum`.
    """
    from dragnet.index import views as views

    folder = Path(view_dir)
    if not folder.is_dir():
        raise UsageError(f"--view: {folder} is not a folder of view files")
    try:
        d = dialects.get(dialect)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    map_file = dialects.map_file(folder, d.name)   # its own file, else one of its fallbacks' (es2015: map.js)
    if not map_file.is_file():
        raise UsageError(f"{folder} has no {d.view_file} ({dialect} version of the view)")
    try:
        source = views.strip_header(map_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {map_file}: {exc}") from None
    if not source.strip():
        raise UsageError(f"{map_file}: holds no function")
    reduce_file = folder / map_file.name.replace("map", "reduce", 1)
    builtin = folder / "reduce"
    reduce_source = None
    if reduce_file.is_file():
        reduce_source = views.load_reduce(str(reduce_file))
    elif builtin.is_file():
        reduce_source = views.load_reduce(builtin.read_text(encoding="utf-8").strip())
    return ViewCode(name=folder.name, dialect=dialect, map_path=str(map_file), map_source=source,
                    reduce_source=reduce_source)


@dataclass
class DocSet:
    """Documents ready to send: each one's map_doc line encoded once, ahead of any timing."""

    ids: list[str]
    lines: list[bytes]
    sizes: list[int]
    origin: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.lines)

    def describe(self) -> dict:
        sizes = self.sizes
        out = dict(self.origin)
        out.update(count=len(sizes), bytes_total=sum(sizes))
        if sizes:
            out.update(bytes_mean=round(stats.mean(sizes), 1), bytes_median=stats.median(sizes),
                       bytes_p99=stats.percentile(sizes, 99), bytes_min=min(sizes), bytes_max=max(sizes))
        return out


def prepare_docs(docs: Iterable[dict], origin: dict | None = None, where: str = "docs") -> DocSet:
    """Encode every document's `["map_doc", doc]` line (compact JSON, UTF-8, as CouchDB sends it)."""
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    ids, lines, sizes = [], [], []
    for n, doc in enumerate(docs, 1):
        if not isinstance(doc, dict):
            raise UsageError(f"{where}: document {n} is not a JSON object")
        doc_id = doc.get("_id")
        if not isinstance(doc_id, str) or not doc_id:
            raise UsageError(f"{where}: document {n} has no string _id")
        body = dumps(doc).encode("utf-8")
        ids.append(doc_id)
        sizes.append(len(body))
        lines.append(b'["map_doc",' + body + b"]\n")
    if not lines:
        raise UsageError(f"{where}: no documents")
    return DocSet(ids, lines, sizes, dict(origin or {}))


def read_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Documents from a JSON-lines file (gzip too), read as `dragnet import` reads it (data_prep.nacp);
    a bad record stops with its location."""
    try:
        for location, raw in Source(path).records():
            if isinstance(raw, Malformed):
                raise UsageError(f"{location}: {raw.reason}")
            try:
                doc = json.loads(raw) if isinstance(raw, (bytes, str)) else raw
            except ValueError as exc:
                raise UsageError(f"{location}: not JSON ({exc})") from None
            if not isinstance(doc, dict):
                raise UsageError(f"{location}: not a JSON object")
            yield doc
    except (OSError, EOFError) as exc:  # missing, unreadable, truncated or corrupt gzip
        raise UsageError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def load_docs(path: str | os.PathLike) -> DocSet:
    return prepare_docs(read_jsonl(path), origin={"source": str(path)}, where=str(path))


def sample_path(count: int, seed: int, cache_dir: str | os.PathLike = "cache") -> Path:
    return Path(cache_dir) / f"decl-{count}-seed{seed}.jsonl.gz"


def generated_docs_path(count: int, seed: int, cache_dir: str | os.PathLike = "cache") -> Path:
    """A cached sample of `count` normalised declarations from `seed`, generated on first use."""
    if count < 1:
        raise UsageError(f"--count must be at least 1, got {count}")
    path = sample_path(count, seed, cache_dir)
    if path.is_file():
        return path
    from data_prep import generate

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")  # keeps the .gz suffix
    try:
        # normalised (numbers as numbers, …), as the views expect and as `dragnet import` loads them
        generate.generate_file(str(tmp), count, seed, normalise=True)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# -- running ----------------------------------------------------------------------------------

# ShardRun and Run are the results schema's records of a qsbench run (dragnet.results.schema)


def _expect_true(qs: QueryServerProcess, message: list, what: str) -> None:
    answer = qs.prompt(message)
    if answer is not True:
        raise ProtocolError(f"query server {qs.name} answered {json.dumps(answer)[:200]} to {what}", qs.name)


def run_shard(spec: ServerSpec, view: ViewCode, lines: Sequence[bytes], ids: Sequence[str], *, shard: int = 0,
              timeout: float = 5.0, barrier: threading.Barrier | None = None, driver: str = "auto") -> ShardRun:
    """Spawn the server and replay one shard's indexing; raises ProtocolError on any failure."""
    qs = QueryServerProcess(spec.argv, env=dict(spec.env) or None, timeout=timeout, name=spec.name)
    try:
        reset = qs.prompt_raw(RESET_LINE)
        startup_ns = time.perf_counter_ns() - qs.started_ns
        if reset.strip() != b"true":
            raise ProtocolError(f"query server {spec.name} answered {reset[:200]!r} to reset", spec.name)
        if view.lib:
            _expect_true(qs, ["add_lib", view.lib], "add_lib")
        _expect_true(qs, ["add_fun", view.map_source], f"add_fun of {view.map_path}")
        if barrier is not None:
            barrier.wait()

        sched0 = schedstat_of(qs.pid)
        loop = map_loop(qs, lines, driver)
        answers, latencies, map_ns, driver_cpu_s = loop.answers, loop.latencies_ns, loop.map_ns, loop.driver_cpu_s
        sched1 = schedstat_of(qs.pid)
        map_cpu_s = map_wait_s = None
        if sched0 and sched1:
            map_cpu_s, map_wait_s = sched1[0] - sched0[0], sched1[1] - sched0[1]
        clock = time.perf_counter_ns

        reduction, reduce_ns = None, 0
        if view.os_reduce:
            kvs = _rows_for_reduce(answers, ids, spec.name)
            t_r = clock()
            reduction = _reduce(qs, view.reduce_source, kvs)
            reduce_ns = clock() - t_r
        log_lines = qs.log_count
    except BaseException:
        qs.kill()
        qs.close()
        raise
    ps = qs.close()
    return ShardRun(shard=shard, docs=len(lines), pid=qs.pid, startup_ns=startup_ns, map_ns=map_ns,
                    reduce_ns=reduce_ns, latencies_ns=latencies, cpu_s=ps.cpu_s, peak_rss_kb=ps.peak_rss_kb,
                    log_lines=log_lines, answers=answers, reduction=reduction, driver_cpu_s=driver_cpu_s,
                    map_cpu_s=map_cpu_s, map_wait_s=map_wait_s, driver=loop.driver)


def _rows_for_reduce(answers: list[bytes], ids: Sequence[str], name: str) -> list:
    """[[key, doc_id], value] for every row of the first function, as CouchDB hands them to reduce."""
    kvs = []
    for raw, doc_id in zip(answers, ids):
        for key, value in _parse_answer(raw, name)[0]:
            kvs.append([[key, doc_id], value])
    return kvs


def _reduce(qs: QueryServerProcess, source: str, kvs: list) -> Any:
    reductions = []
    for i in range(0, max(len(kvs), 1), REDUCE_BATCH):
        answer = qs.prompt(["reduce", [source], kvs[i:i + REDUCE_BATCH]])
        if not (isinstance(answer, list) and len(answer) == 2 and answer[0] is True):
            raise ProtocolError(f"query server {qs.name} answered {json.dumps(answer)[:200]} to reduce", qs.name)
        reductions.append(answer[1][0])
    answer = qs.prompt(["rereduce", [source], reductions])
    if not (isinstance(answer, list) and len(answer) == 2 and answer[0] is True):
        raise ProtocolError(f"query server {qs.name} answered {json.dumps(answer)[:200]} to rereduce", qs.name)
    return answer[1][0]


def split(n: int, k: int) -> list[range]:
    """k contiguous, nearly equal slices of range(n) (CouchDB shards by hash; sizes are what matter)."""
    k = max(1, min(k, n))
    base, extra = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


def run_once(spec: ServerSpec, view: ViewCode, docs: DocSet, *, index: int = 0, warmup: bool = False,
             shards: int = 1, timeout: float = 5.0, driver: str = "auto") -> Run:
    """One run: `shards` processes in parallel, each over its slice; the first failure is raised."""
    slices = split(len(docs), shards)
    if len(slices) == 1:
        return Run(index, warmup, [run_shard(spec, view, docs.lines, docs.ids, timeout=timeout,
                                                driver=driver)])
    barrier = threading.Barrier(len(slices))
    results: list[ShardRun | None] = [None] * len(slices)
    errors: list[BaseException] = []

    def work(k: int, rng: range) -> None:
        try:
            results[k] = run_shard(spec, view, docs.lines[rng.start:rng.stop], docs.ids[rng.start:rng.stop],
                                   shard=k, timeout=timeout, driver=driver,
                                   barrier=barrier)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k, r), daemon=True) for k, r in enumerate(slices)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]
    return Run(index, warmup, [r for r in results if r is not None])


# -- correctness ------------------------------------------------------------------------------

def _sorted_rows(answer: Any) -> Any:
    # CouchDB stores a doc's rows sorted by key, so emission order does not change the index
    if not isinstance(answer, list):
        return answer
    return [sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)) if isinstance(rows, list) else rows
            for rows in answer]


def answers_equal(a: Any, b: Any, rel: float = REL_TOL) -> bool:
    return values_equal(a, b, rel) or values_equal(_sorted_rows(a), _sorted_rows(b), rel)


def _parse_answer(raw: bytes, name: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise ProtocolError(f"query server {name} answered map_doc with invalid JSON: {raw[:200]!r}",
                            name) from None


@dataclass
class Mismatch:
    doc_id: str
    index: int
    server: str
    reference: str
    got: Any
    expected: Any

    def message(self) -> str:
        return (f"document {self.doc_id}: {self.server} emitted {json.dumps(self.got, ensure_ascii=False)}, "
                f"{self.reference} emitted {json.dumps(self.expected, ensure_ascii=False)}")

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "index": self.index, "server": self.server, "reference": self.reference,
                "got": self.got, "expected": self.expected}


def compare_answers(ids: Sequence[str], reference: Sequence[bytes], got: Sequence[bytes], *, server: str,
                    reference_name: str, rel: float = REL_TOL) -> list[Mismatch]:
    """Every document whose rows differ from the reference's (raw bytes first, parsed only if they differ)."""
    out = []
    for i, (r, g) in enumerate(zip(reference, got)):
        if r == g:
            continue
        try:
            pr = json.loads(r)
        except ValueError:
            pr = r.decode("utf-8", "replace")
        try:
            pg = json.loads(g)
        except ValueError:
            pg = g.decode("utf-8", "replace")
        if not answers_equal(pr, pg, rel):
            out.append(Mismatch(ids[i], i, server, reference_name, pg, pr))
    return out


# -- per-server measurement -------------------------------------------------------------------

@dataclass
class ServerResult:
    spec: ServerSpec
    view: ViewCode | None
    runs: list[Run] = field(default_factory=list)
    error: str | None = None
    answers: list[bytes] = field(default_factory=list, repr=False)   # from the first run
    variants: dict[int, list[bytes]] = field(default_factory=dict, repr=False)  # later runs that differed
    reduction: Any = None
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    version: str | None = None

    @property
    def measured(self) -> list[Run]:
        return [r for r in self.runs if not r.warmup]

    @property
    def status(self) -> str:
        if self.error:
            return "failed"
        if self.mismatch_count:
            return "wrong"
        return "ok"


def measure_server(spec: ServerSpec, view: ViewCode, docs: DocSet, *, repeat: int = 3, warmup: int = 1,
                   shards: int = 1, timeout: float = 5.0, progress: Progress | None = None,
                   driver: str = "auto") -> ServerResult:
    """`warmup` + `repeat` runs; a protocol failure ends the server's measurement with `error` set."""
    result = ServerResult(spec=spec, view=view, version=server_version(spec))
    total = warmup + repeat
    for i in range(total):
        if not _measure_once(result, docs, warmup=i < warmup, shards=shards, timeout=timeout,
                             progress=progress, total=total, driver=driver):
            break
    return result


def _measure_once(result: ServerResult, docs: DocSet, *, warmup: bool, shards: int, timeout: float,
                  progress: Progress | None, total: int, driver: str = "auto") -> bool:
    """One more run of result's server appended to result.runs; False when the server failed."""
    spec, view, i = result.spec, result.view, len(result.runs)
    try:
        run = run_once(spec, view, docs, index=i, warmup=warmup, shards=shards, timeout=timeout, driver=driver)
    except ProtocolError as exc:
        result.error = str(exc)
        if progress:
            progress("failed", server=spec.name, error=str(exc))
        return False
    answers = [a for s in run.shards for a in s.answers]
    reductions = [s.reduction for s in run.shards]
    if not result.answers:
        result.answers = answers
        result.reduction = reductions if view.os_reduce else None
    elif answers != result.answers:
        result.variants[i] = answers
    for s in run.shards:  # keep only the figures; the bytes live in result.answers
        s.answers = []
    result.runs.append(run)
    if progress:
        progress("run", server=spec.name, run=run, done=i + 1, total=total)
    return True


def check_results(results: list[ServerResult], docs: DocSet, reference: str | None = None,
                  keep: int = 10) -> str | None:
    """Compare every server's rows (every run) with the reference server's; returns the reference name.

    The reference is `reference` if it ran without error, else the first server that did.
    """
    ok = [r for r in results if r.error is None and reads_documents(r.spec)]   # the ceiling's rows are not the view's
    if not ok:
        return None
    ref = next((r for r in ok if r.spec.name == reference), ok[0])
    for res in ok:
        if res is ref:
            candidates = list(res.variants.values())
        else:
            candidates = [res.answers, *res.variants.values()]
        seen: set[int] = set()
        for answers in candidates:
            for m in compare_answers(docs.ids, ref.answers, answers, server=res.spec.name,
                                     reference_name=ref.spec.name):
                if m.index in seen:
                    continue
                seen.add(m.index)
                res.mismatch_count += 1
                if len(res.mismatches) < keep:
                    res.mismatches.append(m)
        if res is not ref and ref.view and ref.view.os_reduce and res.reduction is not None:
            if not values_equal(res.reduction, ref.reduction):
                res.mismatch_count += 1
                res.mismatches.append(Mismatch("(reduce)", -1, res.spec.name, ref.spec.name,
                                               res.reduction, ref.reduction))
    return ref.spec.name


# -- summaries (pure) -------------------------------------------------------------------------

@dataclass
class Row:
    """One line of the comparison table, computed from the recorded runs only."""

    name: str
    docs_per_sec: float           # median over measured runs
    rate: stats.Summary           # docs/s over measured runs: mean ± σ, min … max
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    cpu_s: float                  # median over measured runs
    peak_rss_kb: int | None       # max over measured runs (per process)
    startup_ms: float             # median over measured runs
    cpu_per_1000: float = 0.0     # CPU-seconds per 1,000 documents, median over measured runs
    harness_share: float | None = None   # median share of the map loop's wall time that was the driver's
    ratio: float = 1.0            # fastest docs/s / this docs/s (1.0 for the fastest)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["rate"] = self.rate.as_dict()
        return d


def summarize_runs(name: str, runs: Sequence[Run]) -> Row:
    if not runs:
        raise ValueError(f"{name}: no measured runs")
    rates = [r.docs_per_sec for r in runs]
    lat = [x for r in runs for x in r.latencies_ns]
    lat.sort()
    pct = lambda p: stats.percentile(lat, p) / 1e6  # noqa: E731
    rss = [r.peak_rss_kb for r in runs if r.peak_rss_kb is not None]
    return Row(name=name, docs_per_sec=stats.median(rates), rate=stats.summarize(rates),
               p50_ms=pct(50), p95_ms=pct(95), p99_ms=pct(99), max_ms=lat[-1] / 1e6,
               cpu_s=stats.median([r.cpu_s for r in runs]), peak_rss_kb=max(rss) if rss else None,
               startup_ms=stats.median([r.startup_ns / 1e6 for r in runs]),
               cpu_per_1000=stats.median([cpu_per_1000(r) for r in runs]),
               harness_share=stats.median(shares) if (shares := [h for r in runs
                                                                  if (h := r.harness_share) is not None]) else None)


def rank(rows: list[Row]) -> list[Row]:
    """Fastest first, each with its ratio to the fastest."""
    rows = sorted(rows, key=lambda r: r.docs_per_sec, reverse=True)
    if rows:
        top = rows[0].docs_per_sec
        for r in rows:
            r.ratio = top / r.docs_per_sec
    return rows


def run_warnings(rates: dict[str, Sequence[float]]) -> list[str]:
    """hyperfine's warnings on each server's measured run times (docs/s inverted: lower is better)."""
    out = []
    for name, rs in rates.items():
        out += stats.noise_warnings(name, [1 / r for r in rs if r > 0])
    return out


# -- versions and results ---------------------------------------------------------------------

# only arrays laid out by indent= (a raw newline never occurs inside a JSON string)
_INT_ARRAY = re.compile(r"\[\n\s*-?\d+(?:,\n\s*-?\d+)*\n\s*\]")


def server_version(spec: ServerSpec) -> str | None:
    """What is cheaply knowable about the server's version, without speaking the protocol."""
    return qs_registry.probe_version(spec)


def server_entry(res: ServerResult, row: Row | None, latencies: bool = True) -> dict:
    spec = res.spec
    d: dict[str, Any] = {
        "name": spec.name, "language": spec.language, "dialect": spec.dialect, "source": spec.source,
        "command": list(spec.argv), "env_keys": sorted(k for k, _ in spec.env), "version": res.version,
        "view_file": res.view.map_path if res.view else None, "status": res.status, "error": res.error,
        "mismatch_count": res.mismatch_count, "mismatches": [m.as_dict() for m in res.mismatches],
        "runs": [r.as_dict(latencies) for r in res.runs],
    }
    if row is not None:
        d.update(row.as_dict())
        d.pop("name", None)
        d["name"] = spec.name
    return d


def results_document(results: list[ServerResult], rows: list[Row], *, docs: DocSet, view_dir: str,
                     settings: dict, skipped: Sequence[Skipped] = (), reference: str | None = None,
                     latencies: bool = True, pairs: Sequence = (), warnings: Sequence[str] = (),
                     other_load: float | None = None, bench: "Benchmark | None" = None) -> dict:
    by_name = {r.name: r for r in rows}
    ordered = sorted(results, key=lambda r: (r.spec.name not in by_name,
                                             -(by_name[r.spec.name].docs_per_sec if r.spec.name in by_name
                                               else 0)))
    ranking_doc: dict[str, Any] = {
        "test": RANKING_TEST,
        "pairs": [v.as_dict() for v in pairs], "decided": all(v.decided for v in pairs)}
    if bench is not None:
        ranking_doc.update(metric=bench.metric, order=bench.order, rounds=bench.rounds, stopped=bench.stopped,
                           other_pairs=[v.as_dict() for v in bench.other_pairs])
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "protocol": {"mimics": "CouchDB 3.5.0 view indexing (couch_query_servers, couch_os_process)",
                     "reset": ["reset", RESET_CONFIG], "reduce_batch": REDUCE_BATCH},
        "view": {"path": str(view_dir), "name": Path(view_dir).name},
        "docs": docs.describe(),
        "settings": dict(settings, reference=reference, **({"driver": bench.driver} if bench else {})),
        "skipped": [{"name": s.name, "reason": s.reason} for s in skipped],
        "servers": [server_entry(r, by_name.get(r.spec.name), latencies) for r in ordered],
        "ranking": ranking_doc,
        "warnings": list(warnings),
        "other_load": other_load,
    }


def write_results(doc: dict, results_dir: str | os.PathLike = "results") -> Path:
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = out / f"qsbench-{stamp}.json"
    n = 1
    while path.exists():
        n += 1
        path = out / f"qsbench-{stamp}-{n}.json"
    text = json.dumps(doc, ensure_ascii=False, indent=1, default=str)
    # arrays of integers (the per-document latencies) on one line each, not one number per line
    text = _INT_ARRAY.sub(lambda m: re.sub(r"\s+", "", m.group(0)), text)
    return write_results_file(path, doc, text + "\n")


def rows_from_document(doc: dict) -> list[Row]:
    """Recompute the table from a results file's raw runs (what the tests and a reader can check)."""
    rows = []
    for s in doc["servers"]:
        if s["status"] != "ok":
            continue
        runs = [Run.from_dict(r) for r in s["runs"] if not r["warmup"]]
        if runs:
            rows.append(summarize_runs(s["name"], runs))
    return rank(rows)


# -- the whole benchmark ----------------------------------------------------------------------

class Ranked:
    """What a benchmark of several servers says about them as a whole: which failed, whether every adjacent
    pair of its ranking was decided, and the order (needs `results` with .status and `verdicts`, decide.Pair)."""

    @property
    def failed(self) -> list:
        return [r for r in self.results if r.status != "ok"]

    @property
    def decided(self) -> bool:
        return all(v.decided for v in self.verdicts)

    @property
    def order(self) -> str:
        names = [p.faster for p in self.verdicts[:1]] + [p.slower for p in self.verdicts]
        return decide.order_text(names, self.verdicts)


@dataclass
class Benchmark(Ranked):
    results: list[ServerResult]
    rows: list[Row]
    reference: str | None
    skipped: list[Skipped]
    verdicts: list = field(default_factory=list)      # decide.Pair on `metric` (adjacent, cheapest first)
    warnings: list[str] = field(default_factory=list)
    other_load: float | None = None   # share of the machine's CPU used by other processes meanwhile
    metric: str = "cpu"
    other_pairs: list = field(default_factory=list)   # the same on the other metric (wall or cpu)
    rounds: int = 0
    stopped: str = ""                 # decided, max-runs, budget, repeat, failed
    driver: str = ""                  # the map loop that ran: "c" (dragnet-qsdriver) or "python"


def select_servers(specs: Sequence[ServerSpec], skipped: Sequence[Skipped], names: Sequence[str] | None,
                   view_dir: str | os.PathLike) -> tuple[list[tuple[ServerSpec, ViewCode]], list[Skipped]]:
    """The servers to run (each with its view code), and every other one with the reason it is not run."""
    skipped = list(skipped)
    known = {s.name: s for s in specs}
    if names:
        unknown = [n for n in names if n not in known]
        if unknown:
            why = {s.name: s.reason for s in skipped}
            parts = [f"{n} ({why[n]})" if n in why else n for n in unknown]
            raise UsageError(f"--servers: not available here: {', '.join(parts)}; "
                             f"available: {', '.join(known) or 'none'}")
        chosen = [known[n] for n in names]
    else:
        chosen = [s for s in specs if reads_documents(s)]   # the ceiling ranks no engine: only when named
    out = []
    for spec in chosen:
        try:
            out.append((spec, load_view(view_dir, spec.dialect)))
        except UsageError as exc:
            skipped.append(Skipped(spec.name, str(exc)))
    return out, skipped


def reads_documents(spec: ServerSpec) -> bool:
    """False for the null server (the ceiling), whose fixed rows are not the view's."""
    record = qs_registry.server_for(spec)
    return record is None or record.reads_docs


# where a protocol ranking stops: inside CouchDB its own side of each document caps any engine's gain
CEILING_POINTER = ("inside CouchDB its own side of each document caps what any engine gains: `dragnet bench` builds "
                   "the ceiling (a null query server) next to these and reports each engine's share of the build")


def _proc_stat() -> tuple[int, int] | None:
    try:
        return stats.read_proc_stat(Path("/proc/stat").read_text())
    except (OSError, ValueError):
        return None


def _own_cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


BUDGET_S = 120.0    # default --budget of --repeat auto
RANKING_TEST = (f"ratio of costs per 1,000 docs, {decide.LEVEL:.0%} t interval on the log ratios paired by round; "
                f"separated beyond ±{decide.NOISE:.0%}, tied inside ±{decide.TIE:.0%}")


def cpu_per_1000(run: Run) -> float:
    """CPU-seconds per 1,000 documents: the server's threads on CPU during the map loop (schedstat, exact to
    the ns, start-up and compiling left out), else its whole process tree's user + system (wait4)."""
    cpu = run.map_cpu_s
    return (run.cpu_s if cpu is None else cpu) / run.docs * 1000


def cost(run: Run, metric: str) -> float:
    """A run's cost per 1,000 documents, lower is better: CPU-seconds (cpu_per_1000) or wall seconds of
    its map loop."""
    if metric == "cpu":
        return cpu_per_1000(run)
    return 1000 / run.docs_per_sec


def costs_by_round(results: Sequence[ServerResult], metric: str) -> dict[str, dict[Any, float]]:
    """Each working server's measured costs keyed by round (runs without a round keyed apart: never paired)."""
    out: dict[str, dict[Any, float]] = {}
    for r in results:
        if r.status == "failed":
            continue
        out[r.spec.name] = {(m.round if m.round is not None else ("run", m.index)): cost(m, metric)
                            for m in r.measured if cost(m, metric) > 0}
    return out


def check_bounds(repeat: int | None, warmup: int, shards: int, max_runs: int | None,
                 budget_s: float | None) -> None:
    """Bad input, before anything runs."""
    if repeat is not None and repeat < 1:
        raise UsageError(f"--repeat must be at least 1 or auto, got {repeat}")
    if warmup < 0:
        raise UsageError(f"--warmup must be 0 or more, got {warmup}")
    if shards < 1:
        raise UsageError(f"--shards must be at least 1, got {shards}")
    first = decide.MIN_ROUNDS if repeat is None else repeat
    if max_runs is not None and max_runs < first:
        raise UsageError(f"--max-runs {max_runs}: below the {first} rounds of the first look"
                         + ("" if repeat is None else " (--repeat/--min-runs)"))
    if budget_s is not None and budget_s <= 0:
        raise UsageError(f"--budget must be above 0 seconds, got {budget_s}")


def plan_rounds(names: Sequence[str], repeat: int | None, max_runs: int | None, seed: int) -> decide.Plan:
    """--repeat auto (None): looks from the fifth round up to max_runs (default 15); N: N rounds, or with
    max_runs the first look at N."""
    if repeat is None:
        return decide.Plan(list(names), max_runs=max_runs or decide.MAX_RUNS, seed=seed)
    if max_runs is not None:
        return decide.Plan(list(names), min_rounds=repeat, max_runs=max_runs, seed=seed)
    return decide.Plan(list(names), fixed=repeat, seed=seed)


def run_benchmark(servers: Sequence[tuple[ServerSpec, ViewCode]], docs: DocSet, *, repeat: int | None = None,
                  warmup: int = 1, shards: int = 1, timeout: float = 5.0, reference: str | None = None,
                  skipped: Sequence[Skipped] = (), progress: Progress | None = None,
                  max_runs: int | None = None, budget_s: float | None = None, metric: str = "cpu",
                  seed: int = 0, driver: str = "auto") -> Benchmark:
    """Interleaved rounds, each server once per round in a fresh random order, after `warmup` discarded runs.

    repeat=None (--repeat auto): from the fifth round on, only the servers of unresolved adjacent pairs
    (dragnet.measure.decide on `metric`) run again, until none is unresolved, max_runs (default 15) or
    budget_s (default 120 s) is reached. repeat=N: N rounds; with max_runs too, the first look is at N.
    """
    check_bounds(repeat, warmup, shards, max_runs, budget_s)
    driver = resolve_driver(driver)
    plan = plan_rounds([s.name for s, _ in servers], repeat, max_runs, seed)
    if repeat is None:
        budget_s = BUDGET_S if budget_s is None else budget_s
    bound = plan.fixed or plan.max_runs
    stat0, cpu0 = _proc_stat(), _own_cpu_s()
    results = [ServerResult(spec=spec, view=view, version=server_version(spec)) for spec, view in servers]
    by_name = {r.spec.name: r for r in results}
    if progress:
        for r in results:
            progress("start", server=r.spec.name, total=warmup + bound)
    t0 = time.monotonic()
    for _ in range(warmup):
        order = list(results)
        plan.rng.shuffle(order)
        for res in order:
            if res.error is None:
                _measure_once(res, docs, warmup=True, shards=shards, timeout=timeout, progress=progress,
                              total=warmup + bound, driver=driver)
    round_s = time.monotonic() - t0 if warmup else None
    if budget_s is not None and round_s is not None and round_s > budget_s:
        raise UsageError(f"--budget {budget_s:g} s is too small for one round (the warm-up round took "
                         f"{round_s:.1f} s)")
    t_rounds = time.monotonic()

    def state() -> tuple[dict, dict]:
        costs = costs_by_round(results, metric)
        return costs, {n: len(by_name[n].measured) for n in costs}

    def measure(name: str, rnd: int) -> None:
        res = by_name[name]
        if res.error is None and _measure_once(res, docs, warmup=False, shards=shards, timeout=timeout,
                                               progress=progress, total=warmup + bound, driver=driver):
            res.runs[-1].round = rnd

    def over_budget() -> bool:    # another round of the mean length would overrun it
        spent = time.monotonic() - t_rounds
        return budget_s is not None and time.monotonic() - t0 + spent / plan.rounds > budget_s

    decide.drive(plan, state, measure, over_budget)
    ref = check_results(_reset_checks(results), docs, reference)
    ok = [r for r in results if r.status == "ok"]
    rows = rank([summarize_runs(r.spec.name, r.measured) for r in ok if r.measured])
    pairs = ranking(ok, metric, plan, repeat)
    other = ranking(ok, "wall" if metric == "cpu" else "cpu", plan, repeat)
    stat1 = _proc_stat()
    load = stats.other_load(stat0, stat1, _own_cpu_s() - cpu0, os.sysconf("SC_CLK_TCK")) \
        if stat0 and stat1 else None
    rates = {r.spec.name: [m.docs_per_sec for m in r.measured] for r in ok}
    warnings = run_warnings(rates)
    if load is not None and stats.load_warning(load):
        warnings.append(stats.load_warning(load))
    if repeat is not None and repeat < 2:
        warnings.append(f"--repeat {repeat}: one round gives no interval; nothing can be decided")
    warnings += disagreement_warnings(pairs, other)
    return Benchmark(results, rows, ref, list(skipped), pairs, warnings, load, metric=metric, other_pairs=other,
                     rounds=plan.rounds, stopped=plan.stopped or "", driver=driver)


def disagreement_warnings(pairs: Sequence[decide.Pair], other: Sequence[decide.Pair]) -> list[str]:
    return [f"CPU and wall disagree: by {p.metric} {p.faster} is ahead of {p.slower}, by {q.metric} {q.faster} is "
            f"ahead (CPU ranks efficiency, wall ranks speed: helper threads such as a JIT or GC cost CPU in parallel)"
            for p, q in decide.disagreements(pairs, other)]


def ranking(ok: Sequence[ServerResult], metric: str, plan: "decide.Plan", repeat: int | None) -> list[decide.Pair]:
    """The servers ordered on `metric`, each adjacent pair judged; unresolved ones say why (budget and max-runs
    included)."""
    costs = {n: c for n, c in costs_by_round(ok, metric).items() if c}
    _, pairs = decide.order(costs, metric=metric)
    if plan.stopped in ("budget", "max-runs"):
        why = "budget" if plan.stopped == "budget" else "max-runs"
        pairs = [dataclasses.replace(p, why=f"{p.why}; stopped by {why}") if p.state == decide.UNRESOLVED else p
                 for p in pairs]
    return pairs


def _reset_checks(results: list[ServerResult]) -> list[ServerResult]:
    for r in results:
        r.mismatches, r.mismatch_count = [], 0
    return results


def available_servers(env: dict | None = None, config: str | None = None) -> tuple[list[ServerSpec], list[Skipped]]:
    """Every query server found here, and why each other one is not (dragnet.servers.discovery.discover)."""
    from dragnet.servers.available import discover

    return discover(env=env, config=config)
