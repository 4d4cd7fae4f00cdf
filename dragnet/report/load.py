"""Builds under an application load (`bench --load`): the slowdown against the idle build of the same round,
what the load's requests saw, and what it wrote (pure: results dicts in, rows and lines out).

- *Slowdown*: a loaded build's wall time ÷ the idle (`none`) build's of the same engine, storage, other axes
  and round, as a paired 99% interval over the rounds (dragnet.measure.decide): separated, tied or unresolved.
- *Requests*: per kind and window (`before` the build, during the `build`): the rate asked and achieved,
  latency p50/p95/p99/max from the time each request was due (what a client waited), errors per reason,
  conflicts apart, requests not sent (too many waiting at once).
- *Writes*: acknowledged, lost (by id and _rev afterwards: any is a failed run), changes not in the index
  when the build ended, the load's own CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from dragnet.measure import decide
from dragnet.measure.stats import median
from dragnet.report.columns import Column, headers, text_rows
from dragnet.results.record import Build, axes_of

IDLE = "none"
def _has_load(docs: Iterable[dict]) -> bool:
    return any("load" in axes_of(d) or d.get("load") for d in docs)


def _others(doc: dict) -> tuple:
    ax = axes_of(doc)
    return tuple(sorted((k, str(v)) for k, v in ax.items() if k not in ("load", "language", "storage")
                        and v not in (None, "")))


def slowdowns(docs: list[dict]) -> list[dict]:
    """One row per engine, storage, other axes and loaded value: wall times paired by round with `none`."""
    cells: dict[tuple, dict[str, dict]] = {}
    for d in docs:
        ax = axes_of(d)
        if "load" not in ax:
            continue
        fig = Build.of(d)
        if fig.status != "ok" or not fig.wall_s:
            continue
        key = ((d.get("bench") or {}).get("language") or ax.get("language"), ax.get("storage"), _others(d))
        cell = cells.setdefault(key, {}).setdefault(str(ax["load"]), {"wall": {}, "dps": {}})
        # a round is its bench's: several bench folders given to `report` add rounds, not overwrite them
        r = ((d.get("bench") or {}).get("id"), (d.get("bench") or {}).get("repeat"))
        cell["wall"][r] = fig.wall_s
        cell["dps"][r] = fig.docs_per_s
    out = []
    for (lang, storage, others), loads in cells.items():
        idle = loads.get(IDLE)
        for value, got in loads.items():
            if value == IDLE:
                continue
            row = {"engine": lang, "storage": storage, "others": dict(others), "load": value,
                   "rounds": len(got["wall"]), "loaded_wall_s": median(list(got["wall"].values())),
                   "loaded_docs_per_s": _med(got["dps"].values())}
            if idle:
                row.update(idle_wall_s=median(list(idle["wall"].values())), idle_docs_per_s=_med(idle["dps"].values()))
                shared = [r for r in got["wall"] if r in idle["wall"]]
                row["paired_rounds"] = len(shared)
                if len(shared) >= 2:
                    iv = decide.ratio_interval({r: got["wall"][r] for r in shared}, {r: idle["wall"][r] for r in shared})
                    row.update(ratio=iv.ratio, low=iv.low, high=iv.high, verdict=decide.classify(iv))
                elif shared:
                    r = shared[0]
                    row.update(ratio=got["wall"][r] / idle["wall"][r], low=None, high=None,
                               verdict="one round: no interval")
            out.append(row)
    return out


def _med(values) -> float | None:
    v = [x for x in values if x is not None]
    return median(v) if v else None


def _f(x, fmt="{:,.1f}") -> str:
    return "–" if x is None else fmt.format(x)


def slowdown_rows(rows: list[dict]) -> list[list[str]]:
    return text_rows(SLOWDOWN, rows)


def _where(storage, others: dict) -> str:
    return " ".join([str(storage)] + [f"{k}={v}" for k, v in others.items()])


@dataclass(frozen=True)
class Loaded:
    """A build that ran under a load: its bench record, its load record, storage and other axes, round."""
    bench: dict
    load: dict
    where: str
    round: str


@dataclass(frozen=True)
class Window:
    """One request kind's figures in one window (before the build, during it) of a loaded build."""
    build: Loaded
    kind: str
    per: dict                   # the kind's record (asked_per_s, its windows)
    window: str
    figures: dict               # the window's: achieved_per_s, latency, ok, errors, conflicts, not_sent


def _loaded(docs: list[dict]) -> list[Loaded]:
    """Every build that ran under a load; the axes tell apart builds of one round that differ in another axis
    (--couchdb, --q), and the round names its bench when several benches are reported together (each numbers its
    rounds from 1)."""
    benches = {(d.get("bench") or {}).get("id") for d in docs if d.get("load")}
    return [Loaded(d.get("bench") or {}, d["load"], _where(axes_of(d).get("storage"), dict(_others(d))),
                   _round(d.get("bench") or {}, len(benches) > 1)) for d in docs if d.get("load")]


def windows(docs: list[dict]) -> list[Window]:
    return [Window(b, kind, per, window, per[window]) for b in _loaded(docs)
            for kind, per in (b.load.get("kinds") or {}).items() for window in ("before", "build") if per.get(window)]


def request_rows(docs: list[dict]) -> list[list[str]]:
    return text_rows(REQUESTS, windows(docs))


def write_rows(docs: list[dict]) -> list[list[str]]:
    return text_rows(WRITES, _loaded(docs))


def warnings(docs: list[dict]) -> list[str]:
    """What the reader must not miss: rates the machine could not drive, lost writes."""
    out = []
    for x in _loaded(docs):
        b, load = x.bench, x.load
        who = f"{b.get('language')} {x.where} round {x.round}"
        if load.get("not_held"):
            out.append(f"{who}: the load did not hold the asked rate of {', '.join(sorted(set(load['not_held'])))} "
                       f"(achieved below 95%: the machine or CouchDB could not take it; see achieved/s)")
        lost = (load.get("writes_check") or {}).get("lost")
        if lost:
            out.append(f"{who}: {lost} acknowledged write(s) LOST: the run failed")
    return out


def section(docs: list[dict]) -> dict | None:
    """Everything the report shows of the loads, or None when no build ran under one."""
    if not _has_load(docs):
        return None
    return {"slowdown": slowdowns(docs), "requests": request_rows(docs), "writes": write_rows(docs),
            "warnings": warnings(docs)}


def lines(sec: dict) -> list[str]:
    """The section as Markdown tables (console, `report --format markdown`)."""
    from dragnet.report.render.pipe import md_table

    out = []
    if sec["slowdown"]:
        out += ["", "**builds under load** (× slower: loaded wall ÷ idle wall of the same round, 99% paired "
                "interval)", "", md_table(headers(SLOWDOWN), slowdown_rows(sec["slowdown"])).rstrip()]
    if sec["requests"]:
        out += ["", "**the load's requests** (latency from the time due; before: the load alone before the build)",
                "", md_table(headers(REQUESTS), sec["requests"]).rstrip()]
    if sec["writes"]:
        out += ["", "**the load's writes** (every acknowledged write checked by id and _rev afterwards)", "",
                md_table(headers(WRITES), sec["writes"]).rstrip()]
    out += [f"warning: {w}" for w in sec["warnings"]]
    return out


def _round(bench: dict, name_bench: bool = False) -> str:
    r = bench.get("repeat")
    if r is None:
        return "–"
    return f"{bench.get('id')} {r + 1}" if name_bench else str(r + 1)


# ---------------------------------------------------------------- the tables' columns
#
# slowdown rows are slowdowns()' dicts (JSON keeps them whole); requests and writes go to JSON as text

def _slower(r: dict) -> str:
    if r.get("ratio") is None:
        return "–"
    return f"×{r['ratio']:.2f}" + (f" [{r['low']:.2f} … {r['high']:.2f}]" if r.get("low") is not None else "")


SLOWDOWN = (
    Column("engine", lambda r: str(r["engine"]), None),
    Column("storage", lambda r: _where(r["storage"], r["others"]), None),
    Column("load", lambda r: r["load"], None),
    Column("rounds", lambda r: str(r["rounds"]), lambda r: r["rounds"]),
    Column("idle wall s", lambda r: _f(r.get("idle_wall_s"), "{:.2f}"), lambda r: r.get("idle_wall_s")),
    Column("loaded wall s", lambda r: _f(r["loaded_wall_s"], "{:.2f}"), lambda r: r["loaded_wall_s"]),
    Column("idle docs/s", lambda r: _f(r.get("idle_docs_per_s")), lambda r: r.get("idle_docs_per_s")),
    Column("loaded docs/s", lambda r: _f(r.get("loaded_docs_per_s")), lambda r: r.get("loaded_docs_per_s")),
    Column("× slower [99%]", _slower, lambda r: r.get("ratio")),
    Column("verdict", lambda r: r.get("verdict") or "no idle build (give --load none,…)", None),
)


def _lat(key: str):
    return lambda w: _f((w.figures.get("latency") or {}).get(key))


def _errors(w: Window) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted((w.figures.get("errors") or {}).items())) or "0"


REQUESTS = (
    Column("engine", lambda w: str(w.build.bench.get("language")), None),
    Column("storage", lambda w: w.build.where, None),
    Column("round", lambda w: w.build.round, None),
    Column("load", lambda w: w.build.load.get("spec", ""), None),
    Column("kind", lambda w: w.kind, None),
    Column("window", lambda w: w.window, None),
    Column("asked/s", lambda w: _f(w.per.get("asked_per_s"), "{:g}"), lambda w: w.per.get("asked_per_s")),
    Column("achieved/s", lambda w: _f(w.figures.get("achieved_per_s")), lambda w: w.figures.get("achieved_per_s")),
    Column("p50 ms", _lat("p50_ms")),
    Column("p95 ms", _lat("p95_ms")),
    Column("p99 ms", _lat("p99_ms")),
    Column("max ms", _lat("max_ms")),
    Column("ok", lambda w: str(w.figures.get("ok")), lambda w: w.figures.get("ok")),
    Column("errors", _errors, None),
    Column("conflicts", lambda w: str(w.figures.get("conflicts", 0)), lambda w: w.figures.get("conflicts", 0)),
    Column("not sent", lambda w: str(w.figures.get("not_sent", 0)), lambda w: w.figures.get("not_sent", 0)),
)


def _not_indexed(b: Loaded) -> str:
    idx = b.load.get("index") or {}
    return str(idx.get("changes_not_indexed", idx.get("error", "–")))


def _load_cpu(b: Loaded) -> str:
    share = b.load.get("cpu_share_of_core")
    return f"{_f(None if share is None else share * 100)} ({b.load.get('driver', 'aiohttp')})"


WRITES = (
    Column("engine", lambda b: str(b.bench.get("language")), None),
    Column("storage", lambda b: b.where, None),
    Column("round", lambda b: b.round, None),
    Column("load", lambda b: b.load.get("spec", ""), None),
    Column("acknowledged", lambda b: str((b.load.get("writes_check") or {}).get("acknowledged"))),
    Column("lost", lambda b: str((b.load.get("writes_check") or {}).get("lost"))),
    Column("written during build", lambda b: str(b.load.get("written_during_build"))),
    Column("changes not indexed at end", _not_indexed),
    Column("purged", lambda b: f"{(b.load.get('purge') or {}).get('purged')} of "
                               f"{(b.load.get('purge') or {}).get('written')}"),
    Column("load CPU % of a core (generator)", _load_cpu),
)


def keepup_lines(res: dict) -> list[str]:
    """'javascript, readers none: keeps up to 200 docs/s (tried 50 ✓, 100 ✓, 200 ✓, 400 ✗)'."""
    lines = []
    for e in res["engines"]:
        for m in e["modes"]:
            tried = ", ".join(f"{s['rate']:g} {'✓' if s['kept_up'] else '✗' if s['kept_up'] is False else '?'}"
                              for s in m["steps"])
            best = m.get("keeps_up_to")
            head = f"keeps up to {best:g} docs/s" if best is not None else "keeps up with none of the rates tried"
            readers = "no readers (ken)" if m["readers"] == "none" else f"update=true readers at {m['readers']}"
            lines.append(f"{e['engine']}, {readers}: {head} (tried {tried}; full build {e.get('full_build_s', 0):.1f} s)")
            if m.get("never_updated"):
                lines.append("  the view was never updated during the steps: ken did not build it (CouchDB 3.5.0 "
                             "and 3.5.1's ken builds only languages its environment names, "
                             "docs/studies/production-load.md)")
            for s in m["steps"]:
                if s["kept_up"] is not True:
                    lines.append(f"  at {s['rate']:g}/s: {s['why']}")
    return lines
