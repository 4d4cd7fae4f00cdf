"""`dragnet qsbench` on a view folder as one library call: the documents, the servers, the run and its
results file. The CLI parses options, calls prepare() then run(), and hands the outcome to
dragnet.report.render.qsbench; messages and progress come back through callbacks, so nothing here prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dragnet.errors import DragnetError, UsageError
from dragnet.qsbench import run as qsbench

Notify = Callable[[str], None]


def repeat_rounds(text: str, min_runs: int | None) -> int | None:
    """--repeat auto -> None (adaptive), N -> N; --min-runs N is --repeat N."""
    if min_runs is not None:
        return min_runs
    if str(text).strip().lower() == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--repeat {text}: expected auto or a number of rounds") from None
    if n < 1:
        raise UsageError(f"--repeat {text}: at least 1")
    return n


def docset(docs_file, count, fraction, seed, cache_dir, *, notify: Notify | None = None,
           sampling: Callable | None = None) -> qsbench.DocSet:
    """The documents: a file, a sample of a database (drawn once into cache_dir) or generated ones.
    notify gets what is being done (None: quiet); sampling(run) runs a database draw under a progress bar."""
    from dragnet.data.sample import is_db_url

    if docs_file and is_db_url(docs_file):
        return _db_sample(docs_file, count, fraction, seed, cache_dir, notify, sampling)
    if docs_file:
        return qsbench.load_docs(docs_file)
    count = 2000 if count is None else count
    if notify is not None and not qsbench.sample_path(count, seed, cache_dir).is_file():
        notify(f"generating {count} declarations (seed {seed}) into {qsbench.sample_path(count, seed, cache_dir)}")
    path = qsbench.generated_docs_path(count, seed, cache_dir)
    docs = qsbench.load_docs(path)
    docs.origin.update(generated=True, count=count, seed=seed)
    return docs


def _db_sample(spec, count, fraction, seed, cache_dir, notify, sampling) -> qsbench.DocSet:
    """A sample of the database spec (dragnet sample's draw), drawn once into cache_dir and read from there."""
    from dragnet.couchdb.client import mask_url
    from dragnet.data.sample import cached_sample

    if sampling is None:
        path, drawn = cached_sample(spec, count=count, fraction=fraction, seed=seed, cache_dir=cache_dir)
    else:
        path, drawn = sampling(lambda show: cached_sample(spec, count=count, fraction=fraction, seed=seed,
                                                          cache_dir=cache_dir, progress=show))
    if notify is not None:
        notify(f"sample of {mask_url(spec)} " + (f"drawn into {path}" if drawn else f"cached in {path}"))
    docs = qsbench.load_docs(path)
    docs.origin.update(source=mask_url(spec), sample_file=str(path), count=count, fraction=fraction, seed=seed)
    return docs


@dataclass
class ViewPlan:
    """What prepare() chose: the servers (spec, view file), those skipped and why, and the documents."""

    view_dir: str
    chosen: list
    skipped: list
    docs: qsbench.DocSet
    reference: str | None = None


@dataclass
class ViewOutcome:
    """A finished view-folder qsbench: the run, its results document and where it was written."""

    plan: ViewPlan
    bench: Any
    doc: dict
    path: Path
    settings: dict = field(default_factory=dict)

    def compact(self) -> dict:
        """The results document without per-document latencies (what --json prints)."""
        p, b = self.plan, self.bench
        return qsbench.results_document(b.results, b.rows, docs=p.docs, view_dir=p.view_dir, settings=self.settings,
                                        skipped=p.skipped, reference=b.reference, latencies=False,
                                        pairs=b.verdicts, warnings=b.warnings, other_load=b.other_load, bench=b)


def prepare(view_dir: str, names: list[str] | None, reference: str | None, docs_file, count, fraction, seed,
            cache_dir, *, on_skip: Callable | None = None, notify: Notify | None = None,
            sampling: Callable | None = None) -> ViewPlan:
    """The servers that run view_dir (each skipped one given to on_skip) and the documents, or why not."""
    specs, skipped = qsbench.available_servers(config=None)
    chosen, skipped = qsbench.select_servers(specs, skipped, names, view_dir)
    for s in skipped if on_skip is not None else ():
        on_skip(s)
    if not chosen:
        raise DragnetError("no query server to run" + (f" (skipped: {', '.join(s.name for s in skipped)})"
                                                       if skipped else ""))
    if reference and reference not in [s.name for s, _ in chosen]:
        raise UsageError(f"--reference {reference} is not among the servers run "
                         f"({', '.join(s.name for s, _ in chosen)})")
    docs = docset(docs_file, count, fraction, seed, cache_dir, notify=notify, sampling=sampling)
    return ViewPlan(view_dir, chosen, skipped, docs, reference)


def run(plan: ViewPlan, *, repeat, warmup, shards, timeout, max_runs, budget, metric, results_dir,
        progress: Callable | None = None) -> ViewOutcome:
    """Runs the plan's servers (dragnet.qsbench.run.run_benchmark) and writes the results file."""
    settings = {"repeat": "auto" if repeat is None else repeat, "max_runs": max_runs, "budget_s": budget,
                "metric": metric, "warmup": warmup, "shards": shards, "timeout_s": timeout}
    bench = qsbench.run_benchmark(plan.chosen, plan.docs, repeat=repeat, warmup=warmup, shards=shards,
                                  timeout=timeout, reference=plan.reference, skipped=plan.skipped,
                                  progress=progress, max_runs=max_runs, budget_s=budget, metric=metric)
    doc = qsbench.results_document(bench.results, bench.rows, docs=plan.docs, view_dir=plan.view_dir,
                                   settings=settings, skipped=plan.skipped, reference=bench.reference,
                                   pairs=bench.verdicts, warnings=bench.warnings, other_load=bench.other_load,
                                   bench=bench)
    return ViewOutcome(plan, bench, doc, qsbench.write_results(doc, results_dir), settings)


def failure(outcome: ViewOutcome) -> DragnetError | None:
    """The error a run with failed servers ends with, or None."""
    bench = outcome.bench
    if not bench.failed:
        return None
    return DragnetError(f"{len(bench.failed)} of {len(bench.results)} query servers failed: "
                        + ", ".join(f"{r.spec.name} ({'wrong rows' if r.status == 'wrong' else 'error'})"
                                    for r in bench.failed))


@dataclass
class DdocOutcome:
    """A finished --ddoc qsbench: the run, the reduce order checks, its results document and file."""

    bench: Any
    docs: qsbench.DocSet
    settings: dict
    checks: dict
    doc: dict
    path: Path

    def compact(self) -> dict:
        from dragnet.qsbench import ddoc as qsddoc

        return qsddoc.results_document(self.bench, self.docs, self.settings, latencies=False)


def run_ddoc(source, views, names, reference, docs: qsbench.DocSet, *, repeat, warmup, timeout, max_runs, metric,
             results_dir, check_reduce: bool = False, on_skip: Callable | None = None,
             on_start: Callable | None = None) -> DdocOutcome:
    """A whole design document on every server running its language (dragnet.qsbench.ddoc), the reduce
    order checks, and the results file."""
    from dragnet.index import design as dsg
    from dragnet.qsbench import ddoc as qsddoc

    design = dsg.load(source, views=views)
    specs, skipped = qsbench.available_servers(config=None)
    chosen, skipped = qsddoc.select_servers(specs, skipped, names, design)
    for s in skipped if on_skip is not None else ():
        on_skip(s)
    if not chosen:
        raise DragnetError(f"no query server here runs {design.language}")
    if reference and reference not in [s.name for s in chosen]:
        raise UsageError(f"--reference {reference} is not among the servers run ({', '.join(s.name for s in chosen)})")
    settings = {"repeat": repeat or "auto", "max_runs": max_runs, "metric": metric, "warmup": warmup,
                "timeout_s": timeout, "views": design.view_names}
    if on_start is not None:
        on_start(design)
    bench = qsddoc.run_benchmark(chosen, design, docs, repeat=repeat, warmup=warmup, timeout=timeout,
                                 reference=reference, skipped=skipped, max_runs=max_runs, metric=metric)
    doc = qsddoc.results_document(bench, docs, settings)
    checks = _reduce_checks(bench, docs, check_reduce, timeout)
    doc["reduce_checks"] = {v: c.as_dict() for v, c in checks.items()}
    return DdocOutcome(bench, docs, settings, checks, doc, qsbench.write_results(doc, results_dir))


def ddoc_failure(outcome: DdocOutcome, strict: bool) -> DragnetError | None:
    """The error a --ddoc run ends with: a server that failed, or whose rows or reduce results differ
    (an order-dependent reduce is the function's fault, not the server's, unless strict), or None."""
    bench = outcome.bench
    order_dependent = {v for v, c in outcome.checks.items() if c.order_dependent}
    failed = [r for r in bench.failed if r.error or strict or any(
        c["docs"] or (c["reduce"] and v not in order_dependent) for v, c in r.mismatch_counts.items())]
    if not failed:
        return None
    return DragnetError(f"{len(failed)} of {len(bench.results)} query servers failed: "
                        + ", ".join(f"{r.spec.name} ({'different rows' if r.status == 'wrong' else 'error'})"
                                    for r in failed))


def _reduce_checks(bench, docs, check_all: bool, timeout: float) -> dict:
    """The reference engine's order checks: every reduce with --check-reduce, else those whose results
    differ between servers."""
    from dragnet.qsbench import ddoc as qsddoc

    ref = next((r for r in bench.results if r.spec.name == bench.reference and r.error is None), None)
    differing = {v for r in bench.results for v, c in r.mismatch_counts.items() if c["reduce"]}
    if ref is None or not (check_all or differing):
        return {}
    return qsddoc.check_reduces(ref.spec, bench.groups, docs, ref.answers, None if check_all else differing,
                                timeout=max(timeout, 30.0))
