"""beam's activity in the outputs: one entry per engine and CouchDB version, from each build's
"beam_activity" (dragnet.measure.beam); the console, JSON and HTML renderers only format it."""

from __future__ import annotations

from typing import Any, Sequence

from dragnet.measure import beam as _beam

SHOWN_ACTIVITIES = 4     # in a line: the largest ones, the rest summed
SHOWN_KINDS = 4


def section(docs: Sequence[dict]) -> dict | None:
    """{"engines": [{engine, couchdb, storage, builds, work_s, busy_wait_s, activities, kinds}], "missing":
    [why, ...]} over the builds, or None when no build holds the entry (files older than the probe)."""
    from dragnet.results.record import Build

    groups: dict[tuple[str, str, str], list[dict]] = {}
    missing: list[str] = []
    seen = False
    for doc in docs:
        rec = doc.get("beam_activity")
        if rec is None:
            continue
        seen = True
        s = _beam.summary(rec, doc.get("cpu"))
        if s is None:
            why = _beam.why_none(rec)
            if why not in missing:
                missing.append(why)
            continue
        b = Build.of(doc)
        version = str(((doc.get("couchdb") or {}).get("version")) or "?")
        groups.setdefault((b.label, version, b.storage), []).append(s)
    if not seen:
        return None
    engines = []
    for (label, version, storage), summaries in groups.items():
        m = _beam.merge(summaries)
        engines.append({"engine": label, "couchdb": version, "storage": storage, **m})
    engines.sort(key=lambda e: (e["couchdb"], e["storage"], e["engine"]))
    return {"engines": engines, "missing": missing}


def _pct(shares: dict[str, float], n: int) -> str:
    items = list(shares.items())
    shown = [f"{k} {100 * v:.0f}%" for k, v in items[:n]]
    rest = sum(v for _, v in items[n:])
    if rest >= 0.005:
        shown.append(f"rest {100 * rest:.0f}%")
    return ", ".join(shown)


def engine_line(e: dict) -> str:
    """One engine's beam activity in one line: beam's CPU by activity where the builds recorded beam's
    threads, else msacc's thread time."""
    head = f"{e['engine']} (CouchDB {e['couchdb']}, {e['storage']}, {e['builds']} build{'s' if e['builds'] != 1 else ''})"
    if e.get("cpu_activities"):
        return (f"{head}: beam's CPU {e['cpu_s']:.2f} s/build [{_pct(e['cpu_activities'], SHOWN_ACTIVITIES)}]; "
                f"reductions by process [{_pct(e['kinds'], SHOWN_KINDS)}]")
    return (f"{head}: beam's threads busy {e['work_s']:.2f} s/build (thread time, not CPU) "
            f"[{_pct(e['activities'], SHOWN_ACTIVITIES)}]; busy wait {e['busy_wait_s']:.2f} s apart; "
            f"reductions by process [{_pct(e['kinds'], SHOWN_KINDS)}]")


def lines(sec: dict | None) -> list[str]:
    """The console's lines: a heading, one line per engine, a line per reason a build had none."""
    if not sec:
        return []
    out = ["beam's activity during the builds (beam's CPU by thread from the kernel, divided by activity in the "
           "shares msacc saw; reductions by Erlang process kind):"]
    out += ["  " + engine_line(e) for e in sec["engines"]]
    out += [f"  no beam activity: {why}" for why in sec["missing"]]
    return out


def build_lines(res: dict) -> list[str]:
    """One build's lines (addview --benchmark): per node when there are several."""
    rec = res.get("beam_activity")
    if rec is None:
        return []
    s = _beam.summary(rec, res.get("cpu"))
    if s is None:
        return [f"no beam activity: {_beam.why_none(rec)}"]
    if s.get("cpu_activities"):
        out = [f"beam's activity: CPU {s['cpu_s']:.2f} s [{_pct(s['cpu_activities'], SHOWN_ACTIVITIES)}] (the "
               f"kernel's, by thread, divided in msacc's shares); reductions by process "
               f"[{_pct(s['kinds'], SHOWN_KINDS)}]"]
    else:
        out = [f"beam's activity: work {s['work_s']:.2f} s of thread time "
               f"[{_pct(s['activities'], SHOWN_ACTIVITIES)}]; busy wait {s['busy_wait_s']:.2f} s apart; "
               f"reductions by process [{_pct(s['kinds'], SHOWN_KINDS)}]"]
    if len(s["nodes"]) > 1:
        out += [f"  node {name}: work {n['work_s']:.2f} s [{_pct(n['activities'], SHOWN_ACTIVITIES)}]; "
                f"reductions [{_pct(n['kinds'], SHOWN_KINDS)}]" for name, n in s["nodes"].items()]
    probe = rec.get("probe") or {}
    if probe.get("cpu_during_build_s") is not None:
        after = probe.get("cpu_after_build_s")
        out.append(f"  (the probe's own process: {probe['cpu_during_build_s']:.2f} s CPU during the build, "
                   + (f"{after:.2f} s after it collecting its figures, " if after is not None else "")
                   + f"{probe['cpu_s']:.2f} s in all)")
    return out


def _shown(e: dict) -> dict[str, float]:
    return e.get("cpu_activities") or e["activities"]


def chart_traces(sec: dict) -> list[dict[str, Any]]:
    """Plotly bar traces, one per activity, stacked: an engine's share of beam's CPU (else of msacc's thread
    time) by activity."""
    engines = sec["engines"]
    names = [f"{e['engine']} {e['couchdb']} {e['storage']}" for e in engines]
    order = [a for a, _ in _beam.ACTIVITIES] + [_beam.BUSY_WAIT]
    acts = order + sorted({a for e in engines for a in _shown(e)} - set(order))
    return [{"type": "bar", "name": a, "x": names, "y": [100 * _shown(e).get(a, 0.0) for e in engines],
             "hovertemplate": f"%{{x}}<br>{a}: %{{y:.0f}}% of beam's CPU<extra></extra>"}
            for a in acts if any(_shown(e).get(a) for e in engines)]


def html_sections(sec: dict | None) -> list:
    """The HTML page's section: a table per engine and a stacked bar of beam's work by activity."""
    from dragnet.report.html_page import Chart, Section

    if not sec or not sec["engines"]:
        return []
    cpu = lambda e: {"text": f"{e['cpu_s']:.2f}", "sort": e["cpu_s"]} if e.get("cpu_s") is not None else "–"  # noqa: E731
    rows = [[e["engine"], e["couchdb"], e["storage"], e["builds"], cpu(e), _pct(_shown(e), SHOWN_ACTIVITIES),
             {"text": f"{e['work_s']:.2f}", "sort": e["work_s"]},
             {"text": f"{e['busy_wait_s']:.2f}", "sort": e["busy_wait_s"]}, _pct(e["kinds"], SHOWN_KINDS)]
            for e in sec["engines"]]
    chart = Chart("beam's CPU by activity", chart_traces(sec),
                  {"barmode": "stack", "yaxis": {"title": {"text": "% of beam's CPU"}}})
    notes = ["beam's CPU by kind of thread is the kernel's; msacc's shares divide each kind's CPU among the "
             "activities (msacc's own seconds are thread time: waiting for a core or a disk counts there); builds "
             "recorded before dragnet kept beam's threads show msacc's thread time instead; reductions are "
             "sampled once a period (period_ms) per process, the rest of the node's exact total is 'unsampled'"] + \
        [f"no beam activity: {why}" for why in sec["missing"]]
    return [Section("beam's activity", ("engine", "CouchDB", "storage", "builds", "beam CPU s/build",
                                        "activities", "msacc thread time s/build", "busy wait s/build",
                                        "reductions by process"),
                    rows, notes, charts=[chart], id="beam-activity")]
