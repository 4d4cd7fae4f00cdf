"""Nouveau index builds as text: one build (`addview --nouveau`), a series (`bench --nouveau`) and the section
`dragnet report` shows for the Nouveau builds among its results. Pure."""

from __future__ import annotations

from statistics import median
from typing import Callable, Sequence

from dragnet.measure import decide

_PARTS = (("qs_cpu", "query server CPU"), ("beam_cpu", "beam CPU"), ("jvm_cpu", "JVM CPU"))


def _mb(n) -> str:
    return "?" if n is None else f"{n / 1e6:.1f} MB"


def split_text(split: dict | None) -> str:
    if not split:
        return "no split (a CouchDB on another machine: no process figures)"
    wall = split.get("of_wall") or {}
    core = split.get("of_core_time") or {}
    busy = ", ".join(f"{name} {wall[k]:.0%}" for k, name in _PARTS if wall.get(k) is not None)
    return (f"on CPU for this share of the {split['wall_s']:.1f} s: {busy or 'not seen'}; of the core-time "
            f"({split['cores']} cores) {core.get('waiting', 0):.0%} nobody's (waiting: round trips, I/O, "
            f"run queue, idle)")


def process_lines(r: dict) -> list[str]:
    """Per process family during the build (pidstat: beam, the query servers and the JVM), and the Nouveau
    container's group when it ran in one."""
    from dragnet.report.render.build_text import format_pidstat_summary

    out = []
    if r.get("pidstat"):
        out.append("per process (pidstat, during the build):")
        out += ["  " + line for line in format_pidstat_summary(r["pidstat"])]
    elif r.get("pidstat_note"):
        out.append(f"per process: {r['pidstat_note']}")
    g = r.get("jvm_cgroup")
    if g:
        cpu = "?" if g.get("cpu_s") is None else f"{g['cpu_s']:.1f} s"
        out.append(f"Nouveau container ({g['group']}): CPU {cpu}, read {_mb(g.get('read_bytes'))}, written "
                   f"{_mb(g.get('write_bytes'))}, peak memory {_mb(g.get('memory_peak_bytes'))} (since it started)")
    return out


def build_lines(r: dict) -> list[str]:
    s = r.get("summary") or {}
    jvm = (r.get("nouveau") or {}).get("jvm") or {}
    out = [f"Nouveau index {r['index']['name']} on {r['language']}: {s['wall_time_s']:.1f} s, "
           f"{s.get('docs_per_s') or 0:,.0f} docs/s over {r.get('doc_count') or 0:,} documents, "
           f"{s.get('cpu_s_per_1000_docs') or 0:.3f} CPU s/1k docs (beam, query servers and JVM)",
           f"index: {s.get('num_docs')} documents, {_mb(s.get('disk_size'))} on disk (the JVM's _nouveau_info); "
           f"CouchDB {(r.get('couchdb') or {}).get('version') or '?'}, Nouveau at {(r.get('nouveau') or {}).get('url')}"
           f" (batch_size {(r.get('nouveau') or {}).get('batch_size') or 'unset'}"
           f"{', -Xmx' + jvm['heap'] if jvm.get('heap') else ''})",
           "split: " + split_text(r.get("split"))]
    for sh in r.get("shards") or []:
        out.append(f"  shard {sh['shard']}: {sh['changes']:,} changes in {sh['seconds']:.1f} s"
                   f" ({sh['docs_per_s'] or 0:,.0f} docs/s)")
    cpu = r.get("cpu") or {}
    if cpu.get("jvm_peak_rss_mb") is not None:
        out.append(f"JVM peak RSS since it started: {cpu['jvm_peak_rss_mb']:.0f} MB")
    out += process_lines(r)
    err = r.get("index_errors") or {}
    if err.get("log") is None:
        out.append("index() exceptions: not counted (CouchDB's log not found)")
    else:
        out.append(f"index() exceptions: {err.get('count', 0)} on {err.get('docs', 0)} documents"
                   + (f" (first: {', '.join(err['first_ids'])})" if err.get("first_ids") else ""))
    for a in r.get("answers") or []:
        if a.get("error"):
            out.append(f"  q={a['q']}: {a['error']}")
        else:
            rel = "" if a.get("relation") in (None, "EQUAL_TO") else "at least "
            out.append(f"  q={a['q']}: {rel}{a.get('total_hits')} hits")
    out.append(f"progress from {r.get('progress_source')}")
    return out


def series_rows(builds: Sequence[dict], key: Callable[[dict], str] = lambda r: r["variant"]) -> list[dict]:
    """One row per variant (or per `key`): medians over its builds."""
    by: dict[str, list[dict]] = {}
    for r in builds:
        by.setdefault(key(r), []).append(r)
    rows = []
    for variant, rs in by.items():
        ss = [r["summary"] for r in rs]
        walls = [s["wall_time_s"] for s in ss]
        splits = [r.get("split") or {} for r in rs]

        def part(k: str) -> float | None:
            vals = [sp["of_wall"][k] for sp in splits if (sp.get("of_wall") or {}).get(k) is not None]
            return median(vals) if vals else None

        cpus = [s["cpu_s_per_1000_docs"] for s in ss if s.get("cpu_s_per_1000_docs") is not None]
        rows.append({"variant": variant, "builds": len(rs), "wall_s": median(walls), "wall_min_s": min(walls),
                     "wall_max_s": max(walls), "docs_per_s": median([s.get("docs_per_s") or 0 for s in ss]),
                     "docs_per_s_min": min(s.get("docs_per_s") or 0 for s in ss),
                     "docs_per_s_max": max(s.get("docs_per_s") or 0 for s in ss),
                     "cpu_s_per_1000_docs": median(cpus) if cpus else None,
                     **{f"{k}_of_wall": part(k) for k, _ in _PARTS},
                     "disk_size": median([s.get("disk_size") or 0 for s in ss]),
                     "num_docs": sorted({s.get("num_docs") for s in ss}, key=str),
                     "index_errors": max(s.get("index_errors") or 0 for s in ss)})
    return rows


def _f3(v: float | None) -> str:
    return "?" if v is None else f"{v:.3f}"


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0%}"


def verdict_lines(verdicts: dict) -> list[str]:
    out = []
    for metric, v in verdicts.items():
        what = "CPU-seconds" if metric == "cpu" else "wall seconds"
        out.append(f"order on {what} per 1,000 docs (> separated, ≈ tied, ? unresolved): {v['text']}")
        for p in v["pairs"]:
            iv = p["interval"]
            shown = ("" if decide.has_interval(decide.Interval(**iv))
                     else f"n={iv['n']}: no interval")
            if shown:   # the runs give no interval: none printed
                out.append(f"  {p['faster']} vs {p['slower']}: ×{p['ratio']:.3f}, {shown}: {p['state']}")
                continue
            out.append(f"  {p['faster']} vs {p['slower']}: ×{p['ratio']:.3f} [{iv['low']:.3f} … {iv['high']:.3f}], "
                       f"n={iv['n']}: {p['state']}{', ' + p['why'] if p.get('why') else ''}")
    return out


# ---------------------------------------------------------------- `dragnet report`: the Nouveau section

def section(builds: Sequence[dict]) -> dict | None:
    """The Nouveau builds among a report's results: one row per combination of the axes that vary between
    them (medians), the axes every build shares, and every build's check queries against the first build's."""
    from dragnet.index.search_build import compare_answers
    from dragnet.results.load import axes_of, axes_text, started_at

    if not builds:
        return None
    builds = sorted(builds, key=started_at)
    axes = [axes_of(r) for r in builds]
    common = {k: v for k, v in axes[0].items() if all(a.get(k) == v for a in axes)}
    label = {id(r): axes_text(a, common) or "(all)" for r, a in zip(builds, axes)}
    rows = series_rows(builds, key=lambda r: label[id(r)])
    # hits are compared between builds of one database only: each database's first build is its reference
    refs: dict[tuple, dict] = {}
    checks = []
    for r in builds:
        ref = refs.setdefault((r.get("db"), r.get("doc_count")), r)
        if ref is not r:
            checks.append({"variant": label[id(r)], "source": r.get("_source"), "round": r.get("round"),
                           "reference": label[id(ref)], "reference_source": ref.get("_source"),
                           "differences": compare_answers(ref, r)})
    return {"common": common, "rows": rows, "verdicts": _verdicts(builds, label),
            "references": [label[id(r)] for r in refs.values()],
            "queries": sorted({a["q"] for r in builds for a in r.get("answers") or [] if a.get("q")}),
            "checks": checks, "builds": [r.get("_source") for r in builds]}


def _verdicts(builds: Sequence[dict], label: dict) -> dict:
    """The rows ordered on CPU and on wall time per 1,000 docs, as bench --nouveau orders its variants; builds
    are paired by round within one folder only. None for one row or builds without rounds."""
    from pathlib import Path

    from dragnet.bench.search_rounds import verdicts

    if len(set(label.values())) < 2 or any(r.get("round") is None for r in builds):
        return {}
    rounds: dict[tuple, int] = {}
    for r in builds:
        rounds.setdefault((str(Path(str(r.get("_source") or ".")).parent), r["round"]), len(rounds) + 1)
    return verdicts([{**r, "variant": label[id(r)],
                      "round": rounds[(str(Path(str(r.get("_source") or ".")).parent), r["round"])]}
                     for r in builds])


def section_lines(sec: dict) -> list[str]:
    common = " ".join(f"{k}={v}" for k, v in sec["common"].items())
    out = [f"\nNouveau index builds ({len(sec['builds'])}){': ' + common if common else ''} (their rows are "
           f"in the design documents' table, as search:NAME):"]
    out.append("the JVM's CPU, a share of the build's wall time (median): "
               + ", ".join(f"{r['variant']} {_pct(r['jvm_cpu_of_wall'])}" for r in sec["rows"]))
    # the figures the design table has no column for
    out.append("CPU s per 1,000 docs, index MB, index() errors (median; errors: the most of any build): "
               + "; ".join(f"{r['variant']} {_f3(r['cpu_s_per_1000_docs'])}, {r['disk_size'] / 1e6:.1f} MB, "
                           f"{r['index_errors']} errors" for r in sec["rows"]))
    diffs = [c for c in sec["checks"] if c["differences"]]
    for c in diffs:
        out.append(f"differs from {c['reference']} ({c['reference_source']}): {c['variant']} "
                   f"({c['source']}): " + "; ".join(c["differences"]))
    if not diffs:
        dbs = len(sec["references"])
        out.append(f"every build answered the {len(sec['queries'])} check queries with the same hits and counts as "
                   + ("the first build" if dbs == 1 else f"the first build on its database ({dbs} databases)")
                   + f" ({', '.join(sec['references'])})")
    # the rows ordered along every axis that varies (a version, a setting), which the design table's cells
    # keep apart; decide's rule, as there
    return out + verdict_lines(sec.get("verdicts") or {})
