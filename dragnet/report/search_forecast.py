"""`forecast --nouveau` read back: its model (rows per engine and quantity, the shape the sweep chose, the
back-test) built once from forecast.json, and its text. Pure."""

from __future__ import annotations

from dragnet.forecast.search_sweep import LABELS, QUANTITIES


def _fmt(unit: str, v: float) -> str:
    return f"{v:,.1f} s" if unit == "s" else f"{v / 1024 ** 2:,.2f} MiB"


def model(out: dict) -> dict:
    """What `forecast --nouveau` shows, from its forecast.json: JSON-ready."""
    rows = []
    for lang, f in sorted((out.get("forecasts") or {}).items()):
        for q, e in f["quantities"].items():
            row = {"language": lang, "quantity": q, "label": LABELS.get(q, q), "unit": e.get("unit"),
                   "builds": len(e.get("points") or []), "warnings": list(e.get("warnings") or [])}
            if e.get("fit"):
                p, fit = e["prediction"], e["fit"]
                row.update(value=p["value"], low=p["low"], high=p["high"], model=fit.get("model") or "linear",
                           k=fit.get("k"), r2=fit.get("r2"), shape=(e.get("choice") or {}).get("reason"))
            rows.append(row)
    checks = [{"language": lang, "quantity": q, "label": LABELS.get(q, q), "unit": QUANTITIES[q][0], **c}
              for lang, qs in sorted((out.get("backtest") or {}).items()) for q, c in qs.items() if q in QUANTITIES]
    jvm = (out.get("nouveau") or {}).get("jvm") or {}
    return {"target_docs": int(out["target"]["doc_count"]), "target_url": out["target"].get("url"),
            "index": (out.get("index") or {}).get("name"), "sizes": out.get("sizes") or [],
            "repeat": out.get("repeat"), "rows": rows,
            "warnings": {lang: f.get("warnings") or [] for lang, f in sorted((out.get("forecasts") or {}).items())},
            "backtest": checks, "couchdb": (out.get("couchdb") or {}).get("version"),
            "batch_size": (out.get("nouveau") or {}).get("batch_size"), "heap": jvm.get("heap"),
            "machine": out.get("machine") or {}, "load_average": out.get("load_average"),
            "backtest_load_average": out.get("backtest_load_average")}


def text(m: dict) -> str:
    lines = [f"Nouveau index {m['index']}: forecast for {m['target_docs']:,} documents"
             + (f" ({m['target_url']})" if m.get("target_url") else "")
             + f" from sizes {', '.join(f'{n:,}' for n in m['sizes'])} ({m['repeat']} build(s) a size and engine)"]
    lang = None
    for r in m["rows"]:
        if r["language"] != lang:
            lang = r["language"]
            lines.append(f"{lang}:")
        if r.get("value") is None:
            lines.append(f"  {r['label']:<32} no fit ({r['builds']} builds)")
            continue
        model = r["model"] + (f" k={r['k']:.2f}" if r["model"] == "power" and r.get("k") else "")
        r2 = "–" if r.get("r2") is None else f"{r['r2']:.3f}"
        lines.append(f"  {r['label']:<32} {_fmt(r['unit'], r['value']):>12}  [{_fmt(r['unit'], r['low'])} … "
                     f"{_fmt(r['unit'], r['high'])}] {model}, r² {r2}, {r['builds']} builds")
        if r.get("shape"):
            lines.append(f"  {'':<32} shape: {r['shape']}")
        lines += [f"  warning: {w}" for w in r["warnings"]]
    for lang, ws in m["warnings"].items():
        lines += [f"  warning ({lang}): {w}" for w in ws]
    mach, load = m["machine"], m.get("load_average")
    lines.append(f"holds for: {mach.get('cpu_model')} × {mach.get('cpu_count')}, "
                 f"{(mach.get('mem_total_kb') or 0) // 1024:,} MiB; CouchDB {m.get('couchdb') or '?'}, "
                 f"Nouveau batch_size {m.get('batch_size') or 'unset'}"
                 f"{', -Xmx' + m['heap'] if m.get('heap') else ''}; load average "
                 f"{'–' if not load else ' → '.join(f'{x:.1f}' for x in load)}")
    for c in m["backtest"]:
        lines.append(f"back-test {c['language']} {c['label']}: predicted {_fmt(c['unit'], c['predicted'])}, built "
                     f"{_fmt(c['unit'], c['actual'])}: error {c['error']:+.1%}, "
                     f"{'inside' if c['inside'] else 'OUTSIDE'} the interval")
    if m["backtest"] and m.get("backtest_load_average"):
        lines.append("load average while the target was built: "
                     + " → ".join(f"{x:.1f}" for x in m["backtest_load_average"]))
    return "\n".join(lines)
