"""Results of one `dragnet addview --benchmark` run: building, writing, reading; also from a recording.

One JSON file per benchmark (schema "dragnet.addview/1"). Every figure in "summary" can be recomputed
from the raw samples stored beside it ("polls", "pidstat.samples", "query_server_stats").
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any, Iterable

from dragnet.measure import pidstat as _pidstat
from dragnet.measure import poller as poller
from dragnet.results import schema as _schema
from dragnet.errors import DragnetError

SCHEMA = _schema.schema(_schema.ADDVIEW)
KIND = "addview"

_LOG_TS = re.compile(r"^\[\w+\]\s+(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)Z")
EXCEPTION_NEEDLE = "function raised exception"


# ---------------------------------------------------------------- pure helpers

def flatten_counters(stats: dict | None) -> dict[str, float]:
    """`{"calls": {"map": {"value": 3, "type": "counter"}}}` -> `{"calls.map": 3}` (counters only)."""
    out: dict[str, float] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "counter" and isinstance(node.get("value"), (int, float)):
            out[prefix] = node["value"]
            return
        for k, v in node.items():
            walk(v, f"{prefix}.{k}" if prefix else k)

    if isinstance(stats, dict) and "body" in stats and "status" in stats:   # a recorded {"t","status","body"}
        stats = stats["body"]
    walk(stats or {}, "")
    return out


def sum_counters(bodies: list[dict]) -> dict:
    """Several nodes' /_node/<name>/_stats/couchdb/query_server bodies as one: counters summed, everything
    else taken from the first (a cluster's work is spread over its nodes' query servers)."""
    def merge(nodes: list) -> Any:
        first = nodes[0]
        if not isinstance(first, dict):
            return first
        if first.get("type") == "counter" and isinstance(first.get("value"), (int, float)):
            return {**first, "value": sum(n.get("value", 0) for n in nodes
                                          if isinstance(n, dict) and isinstance(n.get("value"), (int, float)))}
        return {k: merge([n[k] for n in nodes if isinstance(n, dict) and k in n]) for k in first}

    return merge(bodies) if bodies else {}


def query_server_delta(before: dict | None, after: dict | None) -> dict | None:
    """Counter differences of /_node/_local/_stats/couchdb/query_server, plus map time per call."""
    if before is None or after is None:
        return None
    b, a = flatten_counters(before), flatten_counters(after)
    delta = {k: a[k] - b.get(k, 0) for k in sorted(a)}
    calls, us = delta.get("calls.map"), delta.get("time.map")
    return {"counters": delta, "map_calls": calls, "map_us": us,
            "map_us_per_call": (us / calls) if calls and us is not None else None}


def _log_time(line: str) -> float | None:
    m = _LOG_TS.match(line)
    if not m:
        return None
    stamp = m.group(1)
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in stamp else "%Y-%m-%dT%H:%M:%S"
    return _dt.datetime.strptime(stamp, fmt).replace(tzinfo=_dt.timezone.utc).timestamp()


_LOG_LINE = re.compile(r"^\[(debug|info|notice|warning|error|critical|alert|emergency)\] ")


def stderr_lines(lines: Iterable[str], limit: int = 20) -> str:
    """The last lines of CouchDB's log that CouchDB did not write: a query server's stderr, which its
    processes inherit from beam (the log of a CouchDB whose [log] writer is stderr), without Erlang's
    multi-line reports."""
    out = [ln for ln in lines if ln.strip() and not _LOG_LINE.match(ln) and not ln.startswith(("{", " ", "\t"))]
    return "\n".join(out[-limit:])


def count_logged_exceptions(lines: Iterable[str], t_from: float | None = None, t_to: float | None = None) -> int:
    """`function raised exception` lines of CouchDB's log within [t_from, t_to] (unix seconds).

    CouchDB 3.5 does not name the design document on these lines, so the time window of the build is
    what ties them to it.
    """
    n = 0
    for line in lines:
        if EXCEPTION_NEEDLE not in line:
            continue
        t = _log_time(line)
        if t is not None and ((t_from is not None and t < t_from) or (t_to is not None and t > t_to)):
            continue
        n += 1
    return n


def build_results(*, started_at: str, command: list[str], couchdb: dict | None, machine: dict, storage: str,
                  db: dict, view: dict, polls: list[dict], wall_time_s: float | None, docs: int | None,
                  rows: int | None, ok: bool, error: str | None, pidstat_samples: list[dict] | None = None,
                  pidstat_summary: dict | None = None, pidstat_note: str | None = None,
                  qs_before: dict | None = None, qs_after: dict | None = None,
                  exceptions_logged: int | None = None, extra: dict | None = None,
                  query_server_stderr: str | None = None) -> dict:
    """The results document; summary figures are computed here from the raw polls.
    query_server_stderr: of a failed build, what its query servers wrote to stderr (stderr_lines())."""
    fig = poller.analyze(polls, view["ddoc"])
    docs_per_sec = (docs / wall_time_s) if docs is not None and wall_time_s else None
    summary = {
        "average_all_tasks_cps": fig.average_all_tasks_cps,
        "average_one_task_cps": fig.average_one_task_cps,
        "total_time_s": fig.total_time_s,
        "wall_time_s": wall_time_s,
        "docs": docs,
        "docs_per_sec_wall": docs_per_sec,
        "rows": rows,
        "shards": fig.shards,
        "language": view.get("language"),
        "exceptions_logged": exceptions_logged,
        "ok": ok,
        "error": error,
        "changes": fig.changes,
        "tasks_seen": fig.tasks_seen,
        "polls_used_all": fig.polls_used_all,
        "polls_used_one": fig.polls_used_one,
        "compaction_tasks_ignored": fig.other_tasks_ignored,
        "storage": storage,
    }
    delta = query_server_delta(qs_before, qs_after)
    if delta:
        summary["map_calls"] = delta["map_calls"]
        summary["map_us_per_call"] = delta["map_us_per_call"]
        # a query server that crashed is restarted by CouchDB: counted here, not hidden
        summary["qs_process_starts"] = delta["counters"].get("process_starts")
        summary["qs_process_errors"] = delta["counters"].get("process_errors")
    if query_server_stderr is not None:
        summary["qs_stderr_tail"] = query_server_stderr
    build = fig.as_dict()
    per_poll, per_shard = build.pop("per_poll"), build.pop("per_shard")
    results = {
        "schema": SCHEMA,
        "kind": KIND,
        "started_at": started_at,
        "command": list(command),
        "couchdb": couchdb,
        "machine": machine,
        "storage": storage,
        "db": db,
        "view": view,
        "summary": summary,
        "build": build,
        "polls": polls,
        "per_poll": per_poll,
        "per_shard": per_shard,
        "pidstat": {"samples": pidstat_samples, "summary": pidstat_summary, "note": pidstat_note},
        "query_server_stats": {"before": qs_before, "after": qs_after, "delta": delta},
    }
    if extra:
        results.update(extra)
    return results


# ---------------------------------------------------------------- files

def slug(text: str) -> str:
    """text made safe for file and design document names."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def write_results(results: dict, directory: str | Path) -> Path:
    """Write results as `<dir>/addview-<db>-<language>-<UTC time>.json`; returns the path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    name = f"addview-{slug(str(results['db'].get('name')))}-{slug(str(results['view'].get('language')))}-{stamp}.json"
    path = d / name
    return _schema.write(path, results)


def read_results(path: str | Path) -> dict:
    """Load and check one results file (dragnet.results.schema.read)."""
    return _schema.read(path, _schema.ADDVIEW)


def read_polls(path: str | Path) -> list[dict]:
    """active_tasks.jsonl: one {"t", "tasks"} per line; a bad line is an error naming its number."""
    polls = []
    p = Path(path)
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            poll = json.loads(line)
        except ValueError as exc:
            raise DragnetError(f"{p}:{n}: not JSON ({exc})") from None
        if not isinstance(poll, dict) or "t" not in poll or not isinstance(poll.get("tasks"), list):
            raise DragnetError(f"{p}:{n}: expected {{\"t\": <seconds>, \"tasks\": [...]}}")
        polls.append(poll)
    return polls


# ---------------------------------------------------------------- recordings

def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def from_recording(fixture_dir: str | Path) -> dict:
    """The results structure of one recorded build folder (e.g. ../shared/fixtures/couchdb-3.5.0/javascript).

    Uses active_tasks.jsonl, pidstat.txt, ddoc.json, meta.json, couchdb.log.slice and, when their times fall
    within the build, the sibling stats/query_server_{before,after}.json. The recording harness and pidstat
    itself are left out of the pidstat summary (their pids are in meta.json).
    """
    d = Path(fixture_dir)
    if not (d / "active_tasks.jsonl").is_file():
        raise DragnetError(f"{d}: not a recorded build (no active_tasks.jsonl)")
    meta = _load_json(d / "meta.json") or {}
    ddoc = _load_json(d / "ddoc.json") or {}
    polls = read_polls(d / "active_tasks.jsonl")
    ddoc_id = meta.get("ddoc_id") or ddoc.get("_id")
    view_name = meta.get("view") or next(iter(ddoc.get("views") or {"": None}))
    view_def = (ddoc.get("views") or {}).get(view_name) or {}
    language = meta.get("language") or ddoc.get("language")

    # pidstat: samples, a window from the first trigger to the end of recording, harness excluded
    parsed = _pidstat.parse_file(d / "pidstat.txt") if (d / "pidstat.txt").is_file() else None
    exclude = {p for p in (meta.get("harness_pid"), meta.get("pidstat_pid")) if p}
    samples = parsed.samples if parsed else None
    ps_summary = _pidstat.summarize(samples, exclude_pids=exclude) if samples else None

    query = meta.get("query") or {}
    qjson = meta.get("query_json") if isinstance(meta.get("query_json"), dict) else {}
    db_info = meta.get("db_info_after") or {}
    put = meta.get("put_ddoc") or {}
    error = None
    if put.get("status") and put["status"] >= 400:
        body = put.get("body") or {}
        error = (f"CouchDB answered {put['status']} to PUT /{meta.get('db')}/{ddoc_id}: "
                 f"{body.get('error')}: {body.get('reason')}")
    elif query.get("status") and query["status"] >= 400:
        error = (f"CouchDB answered {query['status']} to GET {query.get('path')}: "
                 f"{qjson.get('error')}: {qjson.get('reason')}")
    ok = error is None and query.get("status") == 200

    t_from = query.get("t_trigger") or meta.get("pidstat_start_t")
    qs_before = qs_after = None
    stats_dir = d.parent / "stats"
    sb, sa = _load_json(stats_dir / "query_server_before.json"), _load_json(stats_dir / "query_server_after.json")
    lo, hi = meta.get("pidstat_start_t"), meta.get("pidstat_stop_t")
    if sb and sa and lo and hi and lo - 60 <= sb.get("t", 0) <= hi and lo <= sa.get("t", 0) <= hi + 60:
        qs_before, qs_after = sb, sa

    log = d / "couchdb.log.slice"
    exceptions = None
    if log.is_file():
        exceptions = count_logged_exceptions(log.read_text(encoding="utf-8", errors="replace").splitlines(),
                                             t_from=None, t_to=None)   # the slice is the build's log already

    header = parsed.header if parsed else None
    machine = {"recorded": True, "hostname": header.hostname if header else None,
               "kernel": header.kernel if header else None, "arch": header.arch if header else None,
               "cpu_count": header.cpus if header else None}
    version = d.parent.name.split("-", 1)[1] if d.parent.name.startswith("couchdb-") else None
    storage = "tmpfs" if "tmpfs" in d.name else "disk"
    started = _dt.datetime.fromtimestamp(t_from, _dt.timezone.utc).isoformat() if t_from else None
    wall = meta.get("wall_s")
    if wall is None and query.get("t_return") and query.get("t_trigger"):
        wall = query["t_return"] - query["t_trigger"]
    return build_results(
        started_at=started,
        command=["recording", d.name],
        couchdb={"version": version, "source": f"recording {d.parent.name}/{d.name}"},
        machine=machine,
        storage=storage,
        db={"name": meta.get("db"), "doc_count": db_info.get("doc_count"),
            "shards": (db_info.get("cluster") or {}).get("q")},
        view={"path": meta.get("mapfile"), "language": language, "ddoc": ddoc_id, "view": view_name,
              "reduce": view_def.get("reduce"), "source": view_def.get("map")},
        polls=polls,
        wall_time_s=wall if ok else None,
        docs=db_info.get("doc_count"),
        rows=qjson.get("total_rows"),
        ok=ok,
        error=error,
        pidstat_samples=samples,
        pidstat_summary=ps_summary,
        qs_before=qs_before,
        qs_after=qs_after,
        exceptions_logged=exceptions,
        extra={"recording": {"dir": str(d), "variant": d.name,
                             "index_update_seq": ((meta.get("info_after") or {}).get("body") or {})
                             .get("view_index", {}).get("update_seq")}},
    )
