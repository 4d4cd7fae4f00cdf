"""The forecast's report model: what `dragnet forecast` and `dragnet report` on a forecast show, built once from
a forecast.json's data (dragnet.forecast.run); report/render/ formats it (text, Markdown, JSON).

Pure: it only reads the dict it is given."""

from __future__ import annotations

from dataclasses import dataclass, field

from dragnet.forecast.chase import waited


@dataclass
class Quantity:
    """One forecast quantity of one engine (build_time, index_bytes, …): the prediction and its interval."""

    name: str
    unit: str                         # "s" or bytes
    points: int                       # the sweep's builds it had, fitted or not
    fitted: bool
    value: float | None = None
    low: float | None = None
    high: float | None = None
    how: str = ""                     # the fit's shape, r² and builds, or the basis of a derived quantity
    shape: str | None = None          # why the held-out sizes chose that shape (dragnet.forecast.choice)
    warnings: list[str] = field(default_factory=list)
    by_part: ByPart | None = None     # the same quantity from its parts (build_cpu, build_time)
    by_bytes: ByPart | None = None    # the same from a cost per document and per index byte (forecast.parts.by_bytes)
    chase: ByPart | None = None       # the same from one shard built held and free (forecast.chase, --chase)


@dataclass
class ByPart:
    """The CPU-seconds or build time from the query servers' and beam's CPU, each with its own shape
    (dragnet.forecast.parts): a second line beside the total fit's."""

    value: float
    low: float
    high: float
    how: str                          # each part's shape, and the share of the cores the build time assumes


@dataclass
class Engine:
    """One engine's forecasts under one variant (a memory limit, a core count, a load; "" for none)."""

    variant: str
    language: str
    quantities: list[Quantity]
    why: str | None                   # why the cost per document grows (dragnet.forecast.growth)
    warnings: list[str]


@dataclass
class BackTest:
    """A prediction against the build of the target's size in the same sweep."""

    language: str
    quantity: str
    unit: str
    predicted: float
    actual: float
    error: float
    inside: bool
    whole_error: float | None         # the whole-database sweep's own error, when shards were forecast apart
    by_part_error: float | None = None   # the forecast by part's error (build_cpu, build_time)
    by_bytes_error: float | None = None  # the forecast by bytes' error (build_cpu, build_time)
    chase_error: float | None = None     # the chase model's error (build_cpu, build_time)


@dataclass
class ForecastReport:
    data: dict                        # forecast.json as written: what --json prints
    target_docs: int
    target_url: str | None
    sizes: list[int]
    engines: list[Engine]
    gains: list[str]                  # switches between engines at the target (report.share.forecast_gains)
    sweep_step: str | None            # --sizes auto: why the sweep stopped where it did
    machine: dict
    versions: dict
    load_average: list[float] | None
    storages: object
    backtests: list[BackTest]
    sweep_dir: str
    charts: list[str]
    draw: str | None = None                                       # how the sweep's sizes were drawn from its data
    sample_warnings: list[str] = field(default_factory=list)      # the sample not the target in small (issue 49)
    not_checked: list[str] = field(default_factory=list)          # what a --target-docs target could not check
    chase_notes: list[str] = field(default_factory=list)          # --chase: why it did not run, its limits
    checks_recorded: str | None = None                            # a re-forecast: whose sample checks it shows


def _quantity(name: str, e: dict) -> Quantity:
    if not e.get("fit"):
        return Quantity(name, e.get("unit", "s"), len(e["points"]), False)
    p, fit = e["prediction"], e["fit"]
    r2 = "–" if fit["r2"] is None else f"{fit['r2']:.3f}"
    model = fit.get("model") or "linear"
    model += f" k={fit['k']:.2f}" if model == "power" else ""
    how = e.get("basis") or f"{model}, r² {r2}, {fit['points']} builds"
    if e.get("shards"):
        how = f"{model}, r² {r2}, {fit['points']} one-shard builds; {how}"
    chose = e.get("choice") or ((e.get("parts") or {}).get("index_files") or {}).get("choice")
    # a disk growth's shape is its parts', said on their own lines
    shape = chose["reason"] if chose and not str(e.get("basis") or "").endswith("disk_growth") else None
    return Quantity(name, e["unit"], len(e.get("points") or []), True, p["value"], p["low"], p["high"], how, shape,
                    list(e.get("warnings") or []))


def _by_part(name: str, f: dict) -> ByPart | None:
    bp = f.get("by_part") or {}
    p = bp.get(name)
    if not p:
        return None
    parts = " + ".join(f"{part.replace('_', ' ')} {shape}" for part, shape in (bp.get("shapes") or {}).items())
    how = f"{parts}, each its own shape, summed"
    if name == "build_time" and bp.get("cores_share"):
        cs = bp["cores_share"]
        how += f", over {cs['assumed']:.2f} of a core (what the sweep's {cs['at_docs']:,} documents got)"
    return ByPart(p["value"], p["low"], p["high"], how)


def _by_bytes(name: str, f: dict) -> ByPart | None:
    bb = f.get("by_bytes") or {}
    p = bb.get(name)
    if not p:
        return None
    parts = " + ".join(f"{part.replace('_', ' ')} {x['per_1000_docs']:.2f} s/1,000 docs + {x['per_gib']:,.0f} s/GiB"
                       for part, x in (bb.get("parts") or {}).items())
    how = f"{parts}, at {bb['index_bytes']['value'] / 1024 ** 2:,.0f} MiB of index files (disk_growth's part)"
    if name == "build_time" and bb.get("cores_share"):
        cs = bb["cores_share"]
        how += f", over {cs['assumed']:.2f} of a core"
    return ByPart(p["value"], p["low"], p["high"], how)


def _chase(name: str, f: dict) -> ByPart | None:
    c = f.get("chase") or {}
    p = c.get(name)
    if not p:
        return None
    how = (f"(q − 1) × held + free CPU-seconds of one shard ({c['shard_docs']:,} documents) built with compaction "
           f"held and free, {c['repeats']} time{'s' if c['repeats'] > 1 else ''}")
    if name == "build_time" and c.get("cores"):
        k = c["cores"]
        how += f", over {k['share']:.2f} of a core (what the sweep's {k['at_size']:,} documents at q={k['q']} got)"
    elif name == "build_time":
        lo, hi = min(c["cores_used"]), max(c["cores_used"])
        cores = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"
        how += f", over {cores} of a core (what the chased build used)"
    return ByPart(p["value"], p["low"], p["high"], how)


def _with_parts(q: Quantity, f: dict) -> Quantity:
    q.by_part = _by_part(q.name, f) if q.fitted else None
    q.by_bytes = _by_bytes(q.name, f) if q.fitted else None
    q.chase = _chase(q.name, f)
    return q


def chase_notes(out: dict) -> list[str]:
    """--chase: why its builds did not run, or its limits and warnings, once per forecast."""
    c = out.get("chase")
    if not c:
        return []
    if c.get("skipped"):
        return [f"--chase did not run: {c['skipped']}"]
    limits = next((m["limits"] for m in (c.get("languages") or {}).values()), [])
    failed = [f"{lang}: {why}" for lang, why in (c.get("failed") or {}).items()]
    return [*(f"chase: {w}" for w in c.get("warnings") or []), *(f"chase failed for {x}" for x in failed),
            *(f"chase limit: {x}" for x in limits)]


def build(out: dict) -> ForecastReport:
    """The report of one forecast (forecast.json's data, or dragnet.forecast.run's result)."""
    from dragnet.forecast.model import QUANTITIES
    from dragnet.report.share import forecast_gains
    from dragnet.results.schema import couchdb_versions

    engines = [Engine(label, lang, [_with_parts(_quantity(q, e), f) for q, e in f["quantities"].items()],
                      (f.get("growth") or {}).get("sentence") or None, list(f["warnings"]))
               for label, per_lang in out["forecasts"].items() for lang, f in sorted(per_lang.items())]
    backtests = [BackTest(lang, q, QUANTITIES.get(q, ("s",))[0], c["predicted"], c["actual"], c["error"],
                          bool(c["inside"]), (c.get("whole_database") or {}).get("error"),
                          (c.get("by_part") or {}).get("error"), (c.get("by_bytes") or {}).get("error"),
                          (c.get("chase") or {}).get("error"))
                 for lang, qs in sorted((out.get("backtest") or {}).items()) for q, c in qs.items()]
    return ForecastReport(
        data=out, target_docs=out["target"]["doc_count"], target_url=out["target"].get("url") or None,
        sizes=list(out["sizes"]), engines=engines, gains=forecast_gains(out),
        sweep_step=describe_step(out["sweep_steps"][-1]) if out.get("sweep_steps") else None,
        machine=out["machine"], versions=couchdb_versions(out), load_average=out.get("load_average") or None,
        storages=(out.get("settings") or {}).get("storages") or None, backtests=backtests,
        sweep_dir=str(out["sweep_dir"]), charts=list((out.get("charts") or {}).values()),
        draw=(out.get("draw") or {}).get("how"),
        sample_warnings=[w["message"] for w in (out.get("sample_checks") or {}).get("warnings") or []],
        not_checked=list((out.get("sample_checks") or {}).get("not_checked") or []), chase_notes=chase_notes(out),
        checks_recorded=(out.get("sample_checks") or {}).get("recorded"))


def _writer_bound(g: dict) -> str:
    """An open build time whose chase was writer-bound (forecast.extend.writer_bound)."""
    t = g["chase_writer_tail"]
    low, high = t["beam_errors"]
    share = t.get("share")
    why = (f"its held builds spent {share[0]:.0%}–{share[1]:.0%} of their wall waiting for CouchDB's view writer"
           if waited(t) else
           f"on CouchDB {t.get('couchdb')} the view writer falls behind as q shards share the cores, which one "
           f"shard alone need not show")
    return (f"{g['language']} {g['quantity']}: by chase, {why}, where the chase's beam CPU erred {low:+.0%} to "
            f"{high:+.0%} on the back-tests (goal {g['goal']:.0%})")


def _beam_alone(g: dict) -> str:
    """An open build time whose chase's beam part, off as on the back-tests, moves it past the goal
    (forecast.extend.alone_bound)."""
    a = g["chase_beam_alone"]
    low, high = a["beam_errors"]
    return (f"{g['language']} {g['quantity']}: by chase, one shard alone prices beam's part {low:+.0%} to "
            f"{high:+.0%} off the target's on the back-tests before 3.5.2, and beam is {a['beam_share']:.0%} of its "
            f"CPU: {a['spread']:.0%} (goal {g['goal']:.0%})")


def describe_step(step: dict) -> str:
    """One line for the forecast's output: why the sweep stopped, what is open, what the next size costs."""
    open_ = "; ".join(_writer_bound(g) if g.get("chase_writer_tail") else
                      _beam_alone(g) if g.get("chase_beam_alone") else
                      f"{g['language']} {g['quantity']}: by chase, its own measurements spread {g['chase_spread']:.0%} "
                      f"(its repeats, the query servers side by side, the shares of the cores the sweep's sizes got)"
                      if g.get("chase_spread") else
                      f"{g['language']} {g['quantity']}: shapes spread {g['spread']:.0%}"
                      + (f", held-out error {g['held_out']:.0%}" if g.get("held_out") is not None else "")
                      + (f", the builds' share of the cores moved {g['cores_share_moved']:.0%} "
                         f"({g['cores_share'][0]:.2f}–{g['cores_share'][1]:.2f} of a core: the wall time follows "
                         f"the machine's load)" if (g.get("cores_share_moved") or 0) > g["goal"] else "")
                      + (f", the builds' threads were ready for {1 + g['slowed']:.1f}× the CPU they got (they "
                         f"waited for other processes)" if (g.get("slowed") or 0) > g["goal"] else "")
                      + (f", the forecast by bytes {g['by_bytes_apart']:.0%} away from it"
                         if (g.get("by_bytes_apart") or 0) > g["goal"] else "")
                      + (f", not carried by the final index: a target shard's {g['writer_queue']['target_shard_docs']:,.0f} "
                         f"documents outgrow twice the {g['writer_queue']['batch_docs']:,.0f} the view writer's queue holds"
                         if g.get("writer_queue") else "")
                      + (f", {g['side_by_side_apart']:.0%} apart by how q updaters side by side grow the index "
                         f"files from the sweep's shards to the target's (an excess per document or a ratio)"
                         if (g.get("side_by_side_apart") or 0) > g["goal"] else "")
                      + (f", the target's database is due for compaction: its copy would add up to "
                         f"{g['db_compaction']:.0%} to the peak (compact it first)"
                         if (g.get("db_compaction") or 0) > g["goal"] else "")
                      + f" (goal {g['goal']:.0%})" for g in step.get("undecided") or [])
    head = {"decided": "the sweep decided", "budget": "the sweep stopped at its budget",
            "data": "the sweep stopped at its data", "sizes": "the sweep could not decide",
            "load": "the sweep stopped at the machine's load", "fifth": "the sweep stopped at a fifth of the target",
            "chase": "the sweep stopped at the chase"}.get(step.get("stop"), "the sweep goes on")
    tail = f"; the next size, {step['next']:,} documents, would cost about {step['next_cost_s']:,.0f} s"
    return f"{head}: {step['reason']}" + (f"; open: {open_}" if open_ else "") + \
        (tail if step.get("stop") not in (None, "budget", "decided", "chase") else "")     # a budget's reason says
    # the cost; a decided sweep, or one the chase holds open, has nothing a next size would settle
