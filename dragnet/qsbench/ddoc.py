"""`qsbench --ddoc`: a whole design document over the query-server protocol, no CouchDB.

Per run, one fresh process gets what CouchDB 3.5 sends while indexing one shard of the design document
(couch_query_servers:start_doc_map/3): `reset`, `add_lib` (views.lib), one `add_fun` per distinct map
function, one `map_doc` per document; then, for each index with JavaScript/Python reduce functions, the
`reduce`/`rereduce` messages of its B-tree (dragnet.index.reduce_batches). Then one process per map function
alone maps the same documents, to split the map time between the functions.

Every engine's rows (per view and document) and root reductions are compared with the reference engine's
(numbers as `qsbench.values_equal`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from dragnet.qsbench import run as qsbench
from dragnet.qsbench.driver import map_loop, resolve as resolve_driver
from dragnet.measure.cpu import schedstat_of
from dragnet.measure import decide, stats as stats
from dragnet.index.design import Design
from dragnet.errors import UsageError
from dragnet.measure.machine import machine_info
from dragnet.servers.protocol import ProtocolError, QueryServerProcess
from dragnet.servers import dialects
from dragnet.servers.registry import LANGUAGE
from dragnet.results.schema import QSBENCH_DDOC, schema
from dragnet.servers.discovery import ServerSpec, Skipped
from dragnet.index.reduce_batches import Call, btree_rows, is_builtin, plan_and_reduce

SCHEMA = schema(QSBENCH_DDOC)
# a map function that emits nothing (dragnet.servers.dialects): its time alone is the protocol's own cost,
# subtracted from each function's time alone before the map time is split between them
NOOP_LABEL = "(no-op map)"


# -- the design document as CouchDB indexes it (pure) -----------------------------------------

@dataclass(frozen=True)
class MapGroup:
    """One index (#mrview): the views sharing a map function, and their reduce functions."""

    map_source: str
    views: tuple[str, ...]                     # design-document order
    reduces: tuple[tuple[str, str], ...] = ()  # (view, source), CouchDB order (reverse of the ddoc)

    @property
    def label(self) -> str:
        return ",".join(self.views)

    @property
    def os_reduces(self) -> list[tuple[str, str]]:
        return [(v, s) for v, s in self.reduces if not is_builtin(s)]


def map_groups(design: Design) -> list[MapGroup]:
    """couch_mrview_util:ddoc_to_mrst (3.5.0, lines 224-266): grouped by map source, in sorted order of the
    source; each group's reduce functions prepended, so in reverse design-document order."""
    by_src: dict[str, tuple[list, list]] = {}
    for name in design.view_names:
        view = design.doc["views"][name]
        names, reds = by_src.setdefault(view["map"], ([], []))
        names.append(name)
        if view.get("reduce"):
            reds.insert(0, (name, view["reduce"]))
    return [MapGroup(src, tuple(n), tuple(r)) for src, (n, r) in
            sorted(by_src.items(), key=lambda kv: kv[0].encode("utf-8"))]


def design_family(design: Design) -> str | None:
    lang = LANGUAGE.get(design.language)
    return lang.family if lang else None


def server_family(spec: ServerSpec) -> str | None:
    lang = LANGUAGE.get(spec.language)
    return lang.family if lang else dialects.family(spec.dialect)


def select_servers(specs: Sequence[ServerSpec], skipped: Sequence[Skipped], names: Sequence[str] | None,
                   design: Design) -> tuple[list[ServerSpec], list[Skipped]]:
    """Servers that can run the design document's language (a name may be a server or a CouchDB language);
    one process command runs once (quickjs-es2015 is quickjs when the code comes from the design doc)."""
    skipped = list(skipped)
    specs = [s for s in specs if qsbench.reads_documents(s)]   # the ceiling runs no view: nothing to compare
    family = design_family(design)
    fits = lambda s: s.language == design.language or (family is not None and server_family(s) == family)  # noqa: E731
    if names:
        chosen = []
        for n in names:
            spec = next((s for s in specs if s.name == n), None) or next((s for s in specs if s.language == n), None)
            if spec is None:
                why = {s.name: s.reason for s in skipped}
                raise UsageError(f"--servers/--languages: {n} is not available here"
                                 + (f" ({why[n]})" if n in why else "")
                                 + f"; available: {', '.join(s.name for s in specs) or 'none'}")
            if not fits(spec):
                raise UsageError(f"{n} runs {server_family(spec) or spec.language}, the design document is "
                                 f"{design.language}")
            chosen.append(spec)
    else:
        chosen = []
        for s in specs:
            if fits(s):
                chosen.append(s)
            else:
                skipped.append(Skipped(s.name, f"does not run {design.language}"))
    out, seen = [], {}
    for s in chosen:
        key = (tuple(s.argv), tuple(s.env))
        if key in seen:
            skipped.append(Skipped(s.name, f"the same process as {seen[key]} (with --ddoc the code comes "
                                           f"from the design document)"))
            continue
        seen[key] = s.name
        out.append(s)
    return out, skipped


# -- one run (I/O) ----------------------------------------------------------------------------

@dataclass
class ViewReduce:
    """One view's reduce in one run: time of its messages (a leaf reduce shared by views of one map
    function is split evenly between them), how many of each, and the root reduction."""

    ns: int = 0
    reduce_calls: int = 0
    rereduce_calls: int = 0
    rows: int = 0
    result: Any = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DdocShardRun(qsbench.ShardRun):
    reduces: dict[str, ViewReduce] = field(default_factory=dict)

    def as_dict(self, latencies: bool = True) -> dict:
        d = super().as_dict(latencies)
        d["reduces"] = {v: r.as_dict() for v, r in self.reduces.items()}
        return d


def start_design(spec: ServerSpec, lib: dict | None, groups: Sequence[MapGroup], timeout: float) -> tuple[QueryServerProcess, int]:
    """A server started as CouchDB starts a shard's indexer: reset, the library, one add_fun per index."""
    qs = QueryServerProcess(spec.argv, env=dict(spec.env) or None, timeout=timeout, name=spec.name)
    return qs, load_design(qs, lib, groups)


def load_design(qs, lib: dict | None, groups: Sequence[MapGroup]) -> int:
    """What CouchDB sends a started server (a QueryServerProcess, or one in a container) before a shard's first
    document: reset, the library, one add_fun per index. Returns the ns from its start to its answer to reset;
    kills and closes it on any failure."""
    try:
        reset = qs.prompt_raw(qsbench.RESET_LINE)
        startup_ns = time.perf_counter_ns() - qs.started_ns
        if reset.strip() != b"true":
            raise ProtocolError(f"query server {qs.name} answered {reset[:200]!r} to reset", qs.name)
        if lib:
            qsbench._expect_true(qs, ["add_lib", lib], "add_lib")
        for g in groups:
            try:
                qsbench._expect_true(qs, ["add_fun", g.map_source], f"add_fun of view {g.label}")
            except ProtocolError as exc:  # name the view: the engine may not know its syntax
                raise ProtocolError(f"add_fun of view {g.label}: {exc}", qs.name) from None
    except BaseException:
        qs.kill()
        qs.close()
        raise
    return startup_ns


def group_rows(answers: Sequence[bytes], ids: Sequence[str], n_groups: int, name: str) -> list[list[tuple]]:
    """Per map function, every document's rows: [[(doc_id, [[key, value], ...]), ...], ...]."""
    out: list[list[tuple]] = [[] for _ in range(n_groups)]
    for raw, doc_id in zip(answers, ids):
        parsed = qsbench._parse_answer(raw, name)
        if not isinstance(parsed, list) or len(parsed) != n_groups:
            raise ProtocolError(f"query server {name} answered map_doc of {doc_id} with "
                                f"{raw[:200]!r} (expected {n_groups} lists of rows)", name)
        for g, rows in enumerate(parsed):
            out[g].append((doc_id, rows))
    return out


def _reduce_group(qs: QueryServerProcess, group: MapGroup, rows: list[tuple], reduces: dict[str, ViewReduce]) -> None:
    sources = [s for _, s in group.reduces]
    views = [v for v, _ in group.reduces]
    clock = time.perf_counter_ns

    def send(call: Call) -> list:
        t0 = clock()
        answer = qs.prompt(call.message)
        ns = clock() - t0
        if not (isinstance(answer, list) and len(answer) == 2 and answer[0] is True
                and isinstance(answer[1], list) and len(answer[1]) == len(call.functions)):
            raise ProtocolError(f"query server {qs.name} answered {json.dumps(answer)[:200]} to {call.kind} "
                                f"of {', '.join(views[i] for i in call.functions)}", qs.name)
        for i in call.functions:
            r = reduces[views[i]]
            r.ns += ns // len(call.functions)
            if call.kind == "reduce":
                r.reduce_calls += 1
                r.rows += call.items
            else:
                r.rereduce_calls += 1
        return answer[1]

    for v, _ in group.os_reduces:
        reduces[v] = ViewReduce()
    root, _ = plan_and_reduce(btree_rows(rows), sources, send)
    for (v, _), result in zip(group.os_reduces, root or [None] * len(group.os_reduces)):
        reduces[v].result = result


def run_design(spec: ServerSpec, design: Design, docs: qsbench.DocSet, *, timeout: float = 5.0,
               only: MapGroup | None = None, driver: str = "auto") -> DdocShardRun:
    """One process over every document: map with every function (or only `only`, without reduce)."""
    groups = [only] if only else map_groups(design)
    lib = design.doc["views"].get("lib")
    qs, startup_ns = start_design(spec, lib, groups, timeout)
    try:
        sched0 = schedstat_of(qs.pid)
        loop = map_loop(qs, docs.lines, driver)
        sched1 = schedstat_of(qs.pid)
        answers, latencies, map_ns = loop.answers, loop.latencies_ns, loop.map_ns
        reduces: dict[str, ViewReduce] = {}
        t_r = time.perf_counter_ns()
        if only is None and any(g.os_reduces for g in groups):
            per_group = group_rows(answers, docs.ids, len(groups), spec.name)
            for g, rows in zip(groups, per_group):
                if g.os_reduces:
                    _reduce_group(qs, g, rows, reduces)
        reduce_ns = time.perf_counter_ns() - t_r if reduces else 0
        log_lines = qs.log_count
    except BaseException:
        qs.kill()
        qs.close()
        raise
    ps = qs.close()
    return DdocShardRun(shard=0, docs=len(docs), pid=qs.pid, startup_ns=startup_ns, map_ns=map_ns,
                        reduce_ns=reduce_ns, latencies_ns=latencies, cpu_s=ps.cpu_s, peak_rss_kb=ps.peak_rss_kb,
                        log_lines=log_lines, answers=answers, reduces=reduces, driver_cpu_s=loop.driver_cpu_s,
                        map_cpu_s=sched1[0] - sched0[0] if sched0 and sched1 else None,
                        map_wait_s=sched1[1] - sched0[1] if sched0 and sched1 else None, driver=loop.driver)


# -- comparison (pure) ------------------------------------------------------------------------

@dataclass
class ViewMismatch:
    view: str
    doc_id: str | None        # None: the view's reduce result
    server: str
    reference: str
    got: Any
    expected: Any

    def message(self) -> str:
        what = f"document {self.doc_id}" if self.doc_id is not None else "reduce"
        dump = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
        return (f"view {self.view}, {what}: {self.server} gave {dump(self.got)}, "
                f"{self.reference} gave {dump(self.expected)}")

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _rows_equal(a: Any, b: Any) -> bool:
    if qsbench.values_equal(a, b):
        return True
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731 - a doc's rows are stored sorted by key
    return isinstance(a, list) and isinstance(b, list) and qsbench.values_equal(sorted(a, key=key), sorted(b, key=key))


def compare(groups: Sequence[MapGroup], ids: Sequence[str], ref_answers: Sequence[bytes],
            got_answers: Sequence[bytes], ref_reduces: dict, got_reduces: dict, *, server: str,
            reference: str) -> list[ViewMismatch]:
    """Every (view, document) whose rows differ from the reference's, then every view whose root
    reduction differs; a view of a shared map function is listed once per view."""
    out = []
    for i, (r, g) in enumerate(zip(ref_answers, got_answers)):
        if r == g:
            continue
        pr, pg = _loads(r), _loads(g)
        for k, group in enumerate(groups):
            er = pr[k] if isinstance(pr, list) and len(pr) > k else pr
            eg = pg[k] if isinstance(pg, list) and len(pg) > k else pg
            if not _rows_equal(eg, er):
                out.extend(ViewMismatch(v, ids[i], server, reference, eg, er) for v in group.views)
    for view in sorted(ref_reduces):
        exp = ref_reduces[view].result if ref_reduces[view] else None
        got = got_reduces.get(view)
        got = got.result if got else None
        if not qsbench.values_equal(got, exp):
            out.append(ViewMismatch(view, None, server, reference, got, exp))
    return out


def _loads(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def counts_by_view(mismatches: Sequence[ViewMismatch]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for m in mismatches:
        c = out.setdefault(m.view, {"docs": 0, "reduce": 0})
        c["docs" if m.doc_id is not None else "reduce"] += 1
    return out


# -- per-function cost (pure) -----------------------------------------------------------------

@dataclass
class FunctionCost:
    kind: str        # "map" | "reduce"
    views: str       # the view (reduce) or the views sharing the map function
    ms: float        # map: the combined run's map time split by each function's time alone; reduce: its time
    share: float     # of all the functions' time
    alone_ms: float | None = None
    calls: int | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def function_costs(groups: Sequence[MapGroup], map_ms: float, alone_ms: dict[str, float],
                   reduce_ms: dict[str, float], calls: dict[str, int], baseline_ms: float = 0.0) -> list[FunctionCost]:
    """Most expensive first. Map time is one message for all functions, so it is split in proportion to
    each function's own cost: its map time alone over the same documents minus a no-op function's
    (`baseline_ms`, the protocol's round trips), or in proportion to the time alone if none is above it."""
    own = {k: max(v - baseline_ms, 0.0) for k, v in alone_ms.items()}
    if not sum(own.values()):
        own = dict(alone_ms)
    total_own = sum(own.values()) or 1.0
    costs = [FunctionCost("map", g.label, map_ms * own[g.label] / total_own, 0.0, alone_ms[g.label])
             for g in groups]
    costs += [FunctionCost("reduce", v, ms, 0.0, calls=calls.get(v)) for v, ms in reduce_ms.items()]
    total = sum(c.ms for c in costs) or 1.0
    for c in costs:
        c.share = c.ms / total
    return sorted(costs, key=lambda c: c.ms, reverse=True)


def most_expensive_view(groups: Sequence[MapGroup], costs: Sequence[FunctionCost]) -> str | None:
    """The view whose own functions cost most (a shared map function counts for each of its views)."""
    per_view: dict[str, float] = {}
    for g in groups:
        for v in g.views:
            per_view[v] = sum(c.ms for c in costs if c.kind == "map" and c.views == g.label)
    for c in costs:
        if c.kind == "reduce":
            per_view[c.views] = per_view.get(c.views, 0.0) + c.ms
    return max(per_view, key=per_view.get) if per_view else None


# -- the benchmark ----------------------------------------------------------------------------

@dataclass
class DdocResult:
    spec: ServerSpec
    runs: list[qsbench.Run] = field(default_factory=list)
    alone_ns: dict[str, list[int]] = field(default_factory=dict)   # map function label -> per profile run
    error: str | None = None
    answers: list[bytes] = field(default_factory=list, repr=False)
    reduces: dict[str, ViewReduce] = field(default_factory=dict)
    mismatches: list[ViewMismatch] = field(default_factory=list)
    mismatch_count: int = 0
    mismatch_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    costs: list[FunctionCost] = field(default_factory=list)
    most_expensive: str | None = None
    version: str | None = None

    @property
    def measured(self) -> list[qsbench.Run]:
        return [r for r in self.runs if not r.warmup]

    @property
    def status(self) -> str:
        return "failed" if self.error else "wrong" if self.mismatch_count else "ok"


@dataclass
class DdocBenchmark(qsbench.Ranked):
    design: Design
    groups: list[MapGroup]
    results: list[DdocResult]
    rows: list[qsbench.Row]
    reference: str | None
    skipped: list[Skipped]
    verdicts: list = field(default_factory=list)      # decide.Pair on `metric` (adjacent, cheapest first)
    warnings: list[str] = field(default_factory=list)
    metric: str = "cpu"
    other_pairs: list = field(default_factory=list)   # the same on the other metric
    rounds: int = 0
    stopped: str = ""
    driver: str = ""


def _run(res: DdocResult, design: Design, docs: qsbench.DocSet, *, warmup: bool, timeout: float,
         progress: qsbench.Progress | None, total: int, driver: str, rnd: int | None = None) -> bool:
    """One more run of res's server appended to res.runs; False (res.error set) when the server failed."""
    try:
        shard = run_design(res.spec, design, docs, timeout=timeout, driver=driver)
    except ProtocolError as exc:
        res.error = str(exc)
        if progress:
            progress("failed", server=res.spec.name, error=str(exc))
        return False
    if not res.answers:
        res.answers, res.reduces = shard.answers, shard.reduces
    shard.answers = []
    run = qsbench.Run(len(res.runs), warmup, [shard], None if warmup else rnd)
    res.runs.append(run)
    if progress:
        progress("run", server=res.spec.name, run=run, done=len(res.runs), total=total)
    return True


def profile(res: DdocResult, design: Design, docs: qsbench.DocSet, *, times: int, timeout: float,
            driver: str) -> None:
    """Each map function alone, `times` times, for its share of the map time; then res.costs."""
    groups = map_groups(design)
    noop = dialects.noop_map(server_family(res.spec) or "")
    plan = groups + ([MapGroup(noop, (NOOP_LABEL,))] if noop else [])
    try:
        for _ in range(times if len(groups) > 1 else 0):
            for g in plan:
                alone = run_design(res.spec, design, docs, timeout=timeout, only=g, driver=driver)
                res.alone_ns.setdefault(g.label, []).append(alone.map_ns)
    except ProtocolError as exc:
        res.error = str(exc)
        return
    measured = res.measured
    map_ms = stats.median([r.shards[0].map_ns for r in measured]) / 1e6
    alone_ms = ({label: stats.median(v) / 1e6 for label, v in res.alone_ns.items()} if res.alone_ns
                else {groups[0].label: map_ms})
    baseline = alone_ms.pop(NOOP_LABEL, 0.0)
    reduce_ms = {v: stats.median([r.shards[0].reduces[v].ns for r in measured]) / 1e6 for v in res.reduces}
    calls = {v: r.reduce_calls + r.rereduce_calls for v, r in res.reduces.items()}
    res.costs = function_costs(groups, map_ms, alone_ms, reduce_ms, calls, baseline)
    res.most_expensive = most_expensive_view(groups, res.costs)


def check(results: Sequence[DdocResult], groups: Sequence[MapGroup], docs: qsbench.DocSet,
          reference: str | None, keep: int = 20) -> str | None:
    ok = [r for r in results if r.error is None]
    if not ok:
        return None
    ref = next((r for r in ok if r.spec.name == reference), ok[0])
    for res in ok:
        if res is ref:
            continue
        found = compare(groups, docs.ids, ref.answers, res.answers, ref.reduces, res.reduces,
                        server=res.spec.name, reference=ref.spec.name)
        res.mismatch_count = len(found)
        res.mismatch_counts = counts_by_view(found)
        # the first `keep` documents, and every reduce difference (one per view at most)
        res.mismatches = [m for m in found if m.doc_id is not None][:keep] + [m for m in found if m.doc_id is None]
    return ref.spec.name


def run_benchmark(servers: Sequence[ServerSpec], design: Design, docs: qsbench.DocSet, *, repeat: int | None = 3,
                  warmup: int = 1, timeout: float = 5.0, reference: str | None = None,
                  skipped: Sequence[Skipped] = (), progress: qsbench.Progress | None = None,
                  max_runs: int | None = None, metric: str = "cpu", seed: int = 0,
                  driver: str = "auto") -> DdocBenchmark:
    """Interleaved rounds as qsbench's (dragnet.qsbench.run.run_benchmark): `warmup` discarded runs, then each
    server once per round in a fresh random order; repeat=None keeps running the servers of unresolved
    adjacent pairs from the fifth round on (dragnet.measure.decide on `metric`, paired by round) up to
    max_runs; repeat=N runs N rounds. Then each server's map functions alone, for their shares."""
    qsbench.check_bounds(repeat, warmup, 1, max_runs, None)
    driver = resolve_driver(driver)
    plan = qsbench.plan_rounds([s.name for s in servers], repeat, max_runs, seed)
    total = warmup + (plan.fixed or plan.max_runs)
    groups = map_groups(design)
    results = [DdocResult(spec, version=qsbench.server_version(spec)) for spec in servers]
    by_name = {r.spec.name: r for r in results}
    if progress:
        for r in results:
            progress("start", server=r.spec.name, total=total)
    for _ in range(warmup):
        order = list(results)
        plan.rng.shuffle(order)
        for res in order:
            if res.error is None:
                _run(res, design, docs, warmup=True, timeout=timeout, progress=progress, total=total, driver=driver)

    def state() -> tuple[dict, dict]:
        live = [r for r in results if r.error is None]
        return qsbench.costs_by_round(live, metric), {r.spec.name: len(r.measured) for r in live}

    def run_one(name: str, rnd: int) -> None:
        res = by_name[name]
        if res.error is None:
            _run(res, design, docs, warmup=False, timeout=timeout, progress=progress, total=total, driver=driver,
                 rnd=rnd)

    decide.drive(plan, state, run_one)
    for res in results:
        if res.error is None and res.measured:
            profile(res, design, docs, times=min(len(res.measured), decide.MIN_ROUNDS), timeout=timeout,
                    driver=driver)
    ref = check(results, groups, docs, reference)
    ok = [r for r in results if r.status == "ok"]
    rows = qsbench.rank([qsbench.summarize_runs(r.spec.name, r.measured) for r in ok])
    rates = {r.spec.name: [m.docs_per_sec for m in r.measured] for r in ok}
    pairs = qsbench.ranking(ok, metric, plan, repeat)
    other = qsbench.ranking(ok, "wall" if metric == "cpu" else "cpu", plan, repeat)
    warnings = qsbench.run_warnings(rates)
    warnings += qsbench.disagreement_warnings(pairs, other)
    return DdocBenchmark(design, groups, results, rows, ref, list(skipped), pairs, warnings, metric=metric,
                         other_pairs=other, rounds=plan.rounds, stopped=plan.stopped or "", driver=driver)


def results_document(bench: DdocBenchmark, docs: qsbench.DocSet, settings: dict, latencies: bool = True) -> dict:
    by_name = {r.name: r for r in bench.rows}
    servers = []
    for res in bench.results:
        d: dict[str, Any] = {
            "name": res.spec.name, "language": res.spec.language, "command": list(res.spec.argv),
            "version": res.version, "status": res.status, "error": res.error,
            "mismatch_count": res.mismatch_count, "mismatch_counts": res.mismatch_counts,
            "mismatches": [m.as_dict() for m in res.mismatches],
            "reduce_results": {v: r.result for v, r in res.reduces.items()},
            "functions": [c.as_dict() for c in res.costs], "most_expensive_view": res.most_expensive,
            "map_alone_ns": res.alone_ns, "runs": [r.as_dict(latencies) for r in res.runs],
        }
        row = by_name.get(res.spec.name)
        if row is not None:
            d.update({k: v for k, v in row.as_dict().items() if k != "name"})
        servers.append(d)
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "protocol": {"mimics": "CouchDB 3.5.0 view indexing (couch_query_servers, couch_mrview, couch_btree)",
                     "reset": ["reset", qsbench.RESET_CONFIG], "btree_chunk_size": 1279},
        "design": {"source": bench.design.source, "id": bench.design.id, "language": bench.design.language,
                   "views": bench.design.view_names, "lib": bench.design.has_lib(),
                   "map_functions": [list(g.views) for g in bench.groups],
                   "reduces": {v: bench.design.reduce_of(v) if is_builtin(bench.design.reduce_of(v) or "")
                               else "function" for v in bench.design.view_names if bench.design.reduce_of(v)}},
        "docs": docs.describe(),
        "settings": dict(settings, reference=bench.reference, driver=bench.driver),
        "skipped": [{"name": s.name, "reason": s.reason} for s in bench.skipped],
        "servers": servers,
        "ranking": {"test": qsbench.RANKING_TEST,
                    "metric": bench.metric, "order": bench.order, "rounds": bench.rounds, "stopped": bench.stopped,
                    "decided": bench.decided, "pairs": [v.as_dict() for v in bench.verdicts],
                    "other_pairs": [v.as_dict() for v in bench.other_pairs]},
        "warnings": list(bench.warnings),
    }


def check_reduces(spec: ServerSpec, groups: Sequence[MapGroup], docs: qsbench.DocSet, answers: Sequence[bytes],
                  views: Sequence[str] | None = None, timeout: float = 30.0) -> dict:
    """Each JavaScript/Python reduce (of `views`, default all) run again in `spec`'s engine over the
    reference's rows in several orders and chunkings (dragnet.index.fault.check_order): {view: OrderCheck}."""
    from dragnet.index.fault import check_order
    from dragnet.index.reduce_batches import expand
    from dragnet.servers.reference_engine import ProcessEngine

    out = {}
    per_group = group_rows(answers, docs.ids, len(groups), spec.name)
    with ProcessEngine(spec, timeout=timeout) as engine:
        for g, rows in zip(groups, per_group):
            kvs = None
            for view, src in g.os_reduces:
                if views is not None and view not in views:
                    continue
                kvs = kvs if kvs is not None else expand(btree_rows(rows))
                out[view] = check_order(engine, src, kvs)
    return out


__all__ = ["MapGroup", "map_groups", "select_servers", "run_design", "compare", "function_costs",
           "run_benchmark", "results_document"]
