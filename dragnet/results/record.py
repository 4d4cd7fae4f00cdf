"""One build as every reader sees it: the typed record of a build's figures and the names it is reported under.

Rules (also in the README):
- A result's *label* is the bench language name (javascript, javascript_quickjs_es2015, erlang_baseline …)
  recorded by `dragnet bench`; for a result made elsewhere it is derived from the view (language, plus
  `_es2015` for an ES2015 source and `erlang_baseline` for the baseline map).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from dragnet.results import schema as rs

BASELINE_LABEL = "erlang_baseline"
SEARCH_PREFIX = "search:"           # a Nouveau index among a design doc's views: search:NAME
SEARCH_ALONE = "(search index)"     # the design doc of a Nouveau index benched alone (bench --nouveau FILE)


def result_label(result: dict) -> str:
    """The language name a result is reported under (see module docstring)."""
    bench = result.get("bench") or {}
    if bench.get("language"):
        return str(bench["language"])
    if rs.kind_of(result) == rs.NOUVEAU:   # a Nouveau build: the engine running index()
        return str(result.get("language") or "unknown")
    if result.get("label"):
        return str(result["label"])
    view = result.get("view") or {}
    summary = result.get("summary") if isinstance(result.get("summary"), dict) else {}
    lang = str(view.get("language") or summary.get("language") or "unknown")
    path = str(view.get("path") or "").lower()
    name = Path(path).name
    if lang == "erlang" and "baseline" in path:
        return BASELINE_LABEL
    if lang.startswith("javascript") and ("es6" in name or "es2015" in name):
        return lang if lang.endswith("_es2015") else f"{lang}_es2015"
    return lang


def started_at(result: dict) -> float:
    """Unix seconds of the build's start (results may carry a number or an ISO 8601 string)."""
    v = result.get("started_at")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    polls = result.get("polls") or []
    if polls and isinstance(polls[0], dict) and "t" in polls[0]:
        return float(polls[0]["t"])
    return 0.0


def scenario_label(result: dict) -> str | None:
    """The scenario a results file's build ran in, or None."""
    sc = result.get("scenario")
    return (result.get("bench") or {}).get("scenario") or (sc.get("label") if isinstance(sc, dict) else None) \
        or None


def combination_label(axes: dict | None, skip: Sequence[str] = ("language", "storage", "scenario", "size")) -> str:
    """'couchdb=couchdb:3.5.2-trixie q=8' for a result's bench.axes (the axes beyond the built-in ones)."""
    if not isinstance(axes, dict):
        return ""
    return " ".join(f"{k}={v}" for k, v in axes.items() if k not in skip and v not in (None, ""))


def design_id(result: dict) -> str | None:
    """The user's design doc a result benchmarked (`--ddoc`), None for a view file's benchmark."""
    d = (result.get("view") or {}).get("design")
    return str(d["id"]) if isinstance(d, dict) and d.get("id") else None


def family_resources(result: dict) -> dict[str, dict[str, float]]:
    """Per command family: mean CPU %, peak RSS (MB, summed over the family's processes), kB written.

    Reads result["pidstat"]["summary"] as dragnet.measure.pidstat.summarize() writes it:
    {family: {"cpu_pct": {"avg", "peak"}, "rss_kb": {"avg", "peak"}, "kb_wr_s": {"avg", "peak"},
    "intervals": n, ...}}; pidstat's intervals are 1 s, so kB written = mean kB/s × intervals.
    """
    summary = ((result.get("pidstat") or {}).get("summary")) or {}
    out: dict[str, dict[str, float]] = {}
    for fam, s in summary.items() if isinstance(summary, dict) else ():
        if not isinstance(s, dict):
            continue
        entry: dict[str, float] = {}
        cpu = _num((s.get("cpu_pct") or {}).get("avg"))
        rss = _num((s.get("rss_kb") or {}).get("peak"))
        wr = _num((s.get("kb_wr_s") or {}).get("avg"))
        intervals = _num(s.get("intervals"))
        if cpu is not None:
            entry["cpu_mean"] = cpu
        if rss is not None:
            entry["rss_peak_mb"] = rss / 1024.0
        if wr is not None and intervals is not None:
            entry["kb_wr"] = wr * intervals
        out[str(fam)] = entry
    return out


_num = rs.number


def nouveau_axes(result: dict) -> dict[str, str]:
    """A Nouveau build's axes: the index, the engine running index(), the database's document count (size),
    the CouchDB version, the live settings it ran under and the JVM's heap."""
    import json

    text = lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True)  # noqa: E731
    out = {"index": str((result.get("index") or {}).get("name")), "language": str(result.get("language"))}
    settings = result.get("settings") or {}
    if settings:   # as views' live settings are labelled: section/key=value
        out["config"] = " ".join(f"{k}={text(settings[k])}" for k in sorted(settings))
    if result.get("doc_count") is not None:   # the database's size: builds of different sizes never one cell
        out["size"] = str(result["doc_count"])
    heap = ((result.get("nouveau") or {}).get("jvm") or {}).get("heap")
    if heap:
        out["heap"] = str(heap)
    version = (result.get("couchdb") or {}).get("version")
    if version:
        out["couchdb"] = str(version)
    return out


def round_of(bench_id: Any, repeat: Any) -> str | None:
    """Builds of one bench round share this key (None: a build that never pairs)."""
    return f"{bench_id}#{repeat}" if bench_id is not None and isinstance(repeat, int) else None


@dataclass(frozen=True)
class Build:
    """One index build, as every reader above results/ sees it: from an addview results file or a Nouveau
    build (Build.of) or from a bench manifest's run entry (Build.of_entry, which holds fewer figures). None
    where the file has no figure. Frozen: a report derives new records (dataclasses.replace), never edits one.

    `storage` is the cell a report groups by: the storage label, then the scenario and the other axes' values
    (builds in different scenarios or settings are never one median). The report derives `label` (variants of
    one map), `repeat` (when not recorded) and `ratio` (to the paired baseline)."""

    label: str
    storage: str
    started_at: float
    ok: bool                             # succeeded and the bench recorded no error
    error: str | None = None
    repeat: int | None = None
    bench_id: str | None = None
    all_cps: float | None = None
    one_cps: float | None = None
    total_s: float | None = None
    wall_s: float | None = None
    docs: int | None = None
    docs_per_s: float | None = None      # by wall time, as recorded, else from docs and wall time: the one docs/s
    # family -> {"cpu_mean": %, "rss_peak_mb": MB, "kb_wr": kB written in total}
    resources: dict[str, dict[str, float]] = field(default_factory=dict)
    source: str = ""
    ratio: float | None = None           # set by the report (dragnet.report.tables.assign_ratios)
    language: str = ""                   # CouchDB language of the view
    # a design document's benchmark (`--ddoc`); None for a view file's
    ddoc: str | None = None
    views: tuple[str, ...] = ()
    comparison: dict | None = None       # rows against the reference engine, as the bench recorded it
    repeat_comparison: dict | None = None   # rows against the same engine's first build (dragnet.bench.run)
    update_lag_s: float | None = None    # --update: last write answered to every view fresh
    incremental_dps: float | None = None
    scenario: str | None = None          # bench --memory/--disk-profile/--cache: part of the storage label
    status: str = ""                     # ok, oom or error, as bench's manifest records runs
    oom_killed: bool = False
    cpu_s_per_1000: float | None = None     # CPU-seconds of CouchDB and its query servers per 1,000 docs
    qs_cpu_s_per_1000: float | None = None  # the query servers' own CPU-seconds (schedstat) per 1,000 docs
    instructions_per_1000: float | None = None  # the map functions' instructions per 1,000 docs (valgrind)
    size: int | None = None              # bench --sizes: the database's document count
    axes: dict = field(default_factory=dict)   # bench.axes, or the axes older files' fields held
    data: dict = field(default_factory=dict, repr=False, compare=False)   # the results dict or manifest entry

    @classmethod
    def of(cls, result: dict) -> "Build":
        """The build an addview results dict (dragnet.addview/1, any age) or a Nouveau build records."""
        if rs.kind_of(result) == rs.NOUVEAU:
            return cls.of_search(result)
        s = (result or {}).get("summary") or {}
        s = s if isinstance(s, dict) else {}
        bench = result.get("bench") or {}
        view = result.get("view") or {}
        storage = str(bench.get("storage_label") or result.get("storage") or "unknown")
        scenario = scenario_label(result)
        if scenario:
            storage = f"{storage} {scenario}"
        extra = combination_label(bench.get("axes"))
        if extra:
            storage = f"{storage} {extra}"
        recorded_ok = s.get("ok")
        succeeded = bool(s.get("ok", s.get("error") is None))   # a file without "ok": no error is success
        docs, wall, dps = _num(s.get("docs")), _num(s.get("wall_time_s")), _num(s.get("docs_per_sec_wall"))
        oom = bool(s.get("oom_killed"))
        update = result.get("update") or {}
        return cls(
            label=result_label(result), storage=storage, started_at=started_at(result),
            ok=succeeded and not bench.get("error"), error=s.get("error") or bench.get("error"),
            repeat=bench.get("repeat") if isinstance(bench.get("repeat"), int) else None,
            bench_id=bench.get("id"),
            all_cps=_num(s.get("average_all_tasks_cps")), one_cps=_num(s.get("average_one_task_cps")),
            total_s=_num(s.get("total_time_s")), wall_s=wall, docs=int(docs) if docs is not None else None,
            docs_per_s=dps if dps is not None else (docs / wall if docs and wall else None),
            resources=family_resources(result), source=str(result.get("_source", "")),
            language=str(view.get("language") or s.get("language") or ""),
            ddoc=design_id(result), views=tuple((view.get("design") or {}).get("views") or ()),
            comparison=result.get("comparison") if isinstance(result.get("comparison"), dict) else None,
            repeat_comparison=result.get("repeat_comparison") if isinstance(result.get("repeat_comparison"), dict)
            else None,
            update_lag_s=_num(s.get("update_lag_s", update.get("lag_s"))),
            incremental_dps=_num(update.get("incremental_docs_per_sec")),
            scenario=scenario, status="ok" if recorded_ok else ("oom" if oom else "error"), oom_killed=oom,
            cpu_s_per_1000=_num(s.get("cpu_s_per_1000_docs")),
            qs_cpu_s_per_1000=_num(s.get("qs_cpu_s_per_1000_docs")),
            instructions_per_1000=instructions_per_1000(result.get("instructions")), size=bench.get("size"),
            axes=axes_of(result), data=result)

    @classmethod
    def of_search(cls, result: dict) -> "Build":
        """A Nouveau index build (dragnet.nouveau/1) as a build of the search index `search:NAME` of its
        design doc (`bench --ddoc`), or of `(search index)` for one given alone; its round is its repeat, its
        folder its bench, so that engines pair by round as views do."""
        s = result.get("summary") if isinstance(result.get("summary"), dict) else {}
        axes = nouveau_axes(result)
        # the cell: every axis but the index and the engine (builds of other versions, sizes or settings are
        # never one median), as a view build's storage label carries its other axes
        storage = " ".join(["nouveau", *(f"{k}={v}" for k, v in axes.items() if k not in ("index", "language"))])
        rnd = result.get("round")
        wall, docs = _num(s.get("wall_time_s")), _num(s.get("num_docs") or result.get("doc_count"))
        ok = bool(s.get("ok", True))
        source = str(result.get("_source", ""))
        return cls(
            label=result_label(result), storage=storage, started_at=started_at(result), ok=ok,
            error=None if ok else str(s.get("error") or "failed"),
            repeat=rnd - 1 if isinstance(rnd, int) else None,
            bench_id=str(Path(source).parent) if source and isinstance(rnd, int) else None,
            wall_s=wall, docs=int(docs) if docs is not None else None, docs_per_s=_num(s.get("docs_per_s")),
            resources=family_resources(result) or _split_resources(result), source=source,
            language=str(result.get("language") or ""), ddoc=str(result.get("design") or SEARCH_ALONE),
            views=(f"{SEARCH_PREFIX}{(result.get('index') or {}).get('name')}",),
            status="ok" if ok else "error",
            cpu_s_per_1000=_num(s.get("cpu_s_per_1000_docs")), size=result.get("doc_count"), axes=axes,
            data=result)

    @property
    def search(self) -> bool:
        """A Nouveau (search) index build rather than a view build."""
        return any(v.startswith(SEARCH_PREFIX) for v in self.views)

    @classmethod
    def of_entry(cls, run: dict) -> "Build":
        """The build a bench manifest's "runs" entry (dragnet.bench/1) records: status and two figures."""
        status = run.get("status") or ""
        dps = _num(run.get("docs_per_sec_wall"))
        return cls(label=run["language"], storage=str(run.get("storage") or ""), started_at=0.0,
                   ok=status == "ok", error=run.get("error"),
                   repeat=run.get("repeat") if isinstance(run.get("repeat"), int) else None,
                   wall_s=_num(run.get("wall_time_s")), docs_per_s=dps, language=run["language"],
                   scenario=run.get("scenario") or "", status=status,
                   oom_killed=status == "oom", size=run.get("size"), axes=dict(run.get("axes") or {}), data=run)

    @property
    def round(self) -> str | None:
        """The bench round it was built in, the key builds are paired by (decide's paired interval)."""
        return round_of(self.bench_id, self.repeat)

    def ranked(self) -> dict:
        """The figures a ranking reads, as reports give them beside a row."""
        return {"round": self.round, "docs_per_s": self.docs_per_s, "cpu_s_per_1000_docs": self.cpu_s_per_1000}

    @property
    def timed(self) -> bool:
        """A successful build with a wall time (what size rows and fits use)."""
        return self.status == "ok" and bool(self.wall_s)

    def figures(self) -> dict:
        """The figures a manifest run entry copies from its build."""
        return {"docs_per_sec_wall": self.docs_per_s, "wall_time_s": self.wall_s}


def _split_resources(result: dict) -> dict[str, dict[str, float]]:
    """A Nouveau build without pidstat: CPU % of one core per family from the kernel's split of its wall time
    (beam, its query servers, the JVM)."""
    from dragnet.servers.registry import LANGUAGES

    of_wall = (result.get("split") or {}).get("of_wall") or {}
    qs = next((lang.processes[0] for lang in LANGUAGES if lang.name == result.get("language") and lang.processes),
              None)
    out = {}
    for fam, key in (("beam", "beam_cpu"), (qs, "qs_cpu"), ("jvm", "jvm_cpu")):
        if fam and _num(of_wall.get(key)) is not None:
            out[fam] = {"cpu_mean": 100 * float(of_wall[key])}
    return out


def instructions_per_1000_docs(ir_with_docs: int, ir_start: int, docs: int) -> float | None:
    """Instructions per 1,000 documents of a count with and without them (dragnet.qsbench.instructions):
    the documents' share (None when there is none)."""
    if docs <= 0 or ir_with_docs <= ir_start:
        return None
    return (ir_with_docs - ir_start) / docs * 1000


def instructions_per_1000(record: Any) -> float | None:
    """The same from a build's `instructions` record, recomputed from its raw counts."""
    if not isinstance(record, dict):
        return None
    try:
        return instructions_per_1000_docs(int(record["ir_with_docs"]), int(record["ir_start"]), int(record["docs"]))
    except (KeyError, TypeError, ValueError):
        return None


def axes_of(result: dict) -> dict:
    """bench.axes, or for older files the axes their old fields held (language, storage, scenario, size)."""
    bench = result.get("bench") if isinstance(result.get("bench"), dict) else {}
    if isinstance(bench.get("axes"), dict):
        return dict(bench["axes"])
    summary = result.get("summary") if isinstance(result.get("summary"), dict) else {}
    language = bench.get("language") or (result.get("view") or {}).get("language") or summary.get("language")
    axes = {"language": language, "storage": bench.get("storage_label") or result.get("storage"),
            "scenario": bench.get("scenario"), "size": bench.get("size")}
    return {k: v for k, v in axes.items() if v is not None}
