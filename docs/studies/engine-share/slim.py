"""Slim a bench folder into the study's evidence: every results file keeps what `dragnet report` reads for the
tables and the engine share (summary, bench, view, machine, versions, trigger, pidstat's per-family summary and
the samples of those processes only), so `dragnet report docs/engine-share/<workload>` recomputes every figure.
Usage: python3 slim.py BENCH_DIR OUT_DIR"""
import json
import sys
from pathlib import Path

KEEP = ("schema", "kind", "started_at", "command", "couchdb", "machine", "storage", "db", "summary", "build",
        "bench", "trigger", "pidstat_command", "pidstat_scope", "index", "sizes", "query_server_stats")
SAMPLE = ("interval", "time", "t", "pid", "usr_pct", "system_pct", "wait_pct", "cpu_pct", "rss_kb", "kb_wr_s",
          "family")

src, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for f in sorted(src.glob("*.json")):
    doc = json.loads(f.read_text())
    if f.name != "bench.json":
        slim = {k: doc[k] for k in KEEP if k in doc}
        view = dict(doc.get("view") or {})
        if "design" in view:
            view["design"] = {k: v for k, v in view["design"].items() if k != "doc"}
        slim["view"] = view
        ps = doc.get("pidstat") or {}
        pids = {p for s in (ps.get("summary") or {}).values() for p in s.get("pids") or ()}
        slim["pidstat"] = {"note": ps.get("note"), "summary": ps.get("summary"),
                           "samples": [{k: s.get(k) for k in SAMPLE} for s in ps.get("samples") or []
                                       if s.get("pid") in pids]}
        doc = slim
    (out / f.name).write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
