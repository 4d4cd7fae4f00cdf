"""beam's activity during a build, from the probe's lines (dragnet/measure/beam_probe.erl): pure.

Two figures per CouchDB node:
- microstate accounting (msacc): the time beam's threads spent in each state (emulator: Erlang code, gc,
  port: port I/O such as the pipes to the query servers, nif, check_io, aux, other, sleep), per thread type
  (scheduler, dirty_cpu_scheduler, dirty_io_scheduler, ...). It is thread time, not CPU time: a scheduler
  that busy-waits (the release's default `+sbwt`) counts that as `other`, which the kernel counts as CPU.
- reductions by Erlang process kind: each process's reductions over the build, sampled every period (a
  process that exits between two samples loses what it did after the last one; `reds_total`, the node's
  exact count, shows how much that was), grouped by what the process is for (KINDS).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

SCHEMA = 1


@dataclass(frozen=True)
class Kind:
    name: str
    what: str
    patterns: tuple[str, ...]   # fnmatch patterns of the probe's keys ("module:function/arity")


# What each Erlang process is for in a view build, matched in order; the first match wins.
KINDS: tuple[Kind, ...] = (
    Kind("loader", "couch_index_updater's loader: reads documents, with the updater's own per-document GC",
         ("couch_index_updater:update/*",)),
    Kind("mapper", "couch_mrview_updater's mapper: sends documents to the query server, waits for it",
         ("couch_mrview_updater:*map_docs*",)),
    Kind("writer", "couch_mrview_updater's writer: merges rows, writes the view B-trees",
         ("couch_mrview_updater:*write*", "couch_mrview_updater:*accumulate*", "couch_mrview_updater:*merge*",
          "couch_mrview_updater:*insert_results*", "couch_mrview_updater:*")),
    Kind("query server", "the query servers' port owners (couch_os_process, with its per-prompt GC) and the "
         "native Erlang server's process", ("couch_os_process:*", "couch_native_process:*",
                                             "couch_quickjs*")),
    Kind("couch_file", "couch_file: the files' reads and writes (shards and view files)", ("couch_file:*",)),
    Kind("couch_index", "couch_index and its updater's server", ("couch_index:*", "couch_index_updater:*",
                                                                  "couch_index_server:*")),
    Kind("queues", "couch_work_queue: the updater's queues between loader, mapper and writer",
         ("couch_work_queue:*",)),
    Kind("db updater", "couch_db_updater: the databases' own writer", ("couch_db_updater:*",)),
    Kind("ioq", "ioq: CouchDB's I/O queue", ("ioq*",)),
    Kind("http", "chttpd and mochiweb: the requests (dragnet's polls, the view request)",
         ("mochiweb*", "chttpd*", "couch_httpd*")),
    Kind("cluster", "rexi and fabric: the cluster's RPC (a view build's requests go through them)",
         ("rexi*", "fabric*", "mem3*")),
    Kind("stats and events", "couch_stats, couch_event and couch_task_status: counters, events, the task's "
         "progress", ("couch_stats*", "couch_event*", "couch_task_status*")),
    Kind("runtime", "ERTS's own processes: signals to processes running on a dirty scheduler (a dirty GC)",
         ("erts_*",)),
    Kind("probe", "the probe's own rpc calls", ("erpc:*", "rpc:*")),
)
OTHER = "other"


def kind_of(key: str) -> str:
    for kind in KINDS:
        if any(fnmatch.fnmatchcase(key, p) for p in kind.patterns):
            return kind.name
    return OTHER


class ProbeOutputError(ValueError):
    """The probe's output is not what beam_probe.erl writes."""


def parse(text: str) -> dict:
    """The probe's lines as {node: raw record}: msacc µs per thread type and state (summed over the type's
    threads), thread counts, reductions per key, GC counts; {"error": why} for a node it could not read."""
    nodes: dict[str, dict] = {}
    ticks: dict[str, dict] = {}

    def node(name: str) -> dict:
        return nodes.setdefault(name, {"msacc_us": {}, "threads": {}, "reductions": {}})

    ended = False
    for n, line in enumerate(text.splitlines(), 1):
        f = line.rstrip("\r").split("\t")
        try:
            if f[0] in ("ready", ""):
                continue
            if f[0] == "end":
                ended = True
            elif f[0] == "error":
                nodes[f[1]] = {"error": f[2]}
            elif f[0] == "node":
                node(f[1]).update(wall_s=int(f[2]) / 1e6, samples=int(f[3]), otp=f[4], ticks_per_s=int(f[5]))
                if len(f) > 6:    # the samples' rpc round trips: a bound of their cost in CouchDB's node
                    node(f[1])["sampling_s"] = int(f[6]) / 1e6
            elif f[0] == "msacc":
                _, name, kind, ident, state, value = f
                by = ticks.setdefault(name, {}).setdefault(kind, {})
                by[state] = by.get(state, 0) + int(value)
                node(name)["threads"].setdefault(kind, set()).add(ident)
            elif f[0] == "gc":
                node(f[1])["gc"] = {"count": int(f[2]), "words_reclaimed": int(f[3])}
            elif f[0] == "reds_total":
                node(f[1])["reductions_total"] = int(f[2])
            elif f[0] == "reds":
                _, name, key, reds, procs, born = f
                node(name)["reductions"][key] = [int(reds), int(procs), int(born)]
            else:
                raise ProbeOutputError(f"line {n}: unknown record {f[0]!r}")
        except (IndexError, ValueError) as exc:
            if isinstance(exc, ProbeOutputError):
                raise
            raise ProbeOutputError(f"line {n}: malformed {f[0]!r} record") from None
    if not ended:
        raise ProbeOutputError("the probe's output ends before its last line")
    for name, rec in nodes.items():
        if "error" in rec:
            continue
        per_s = rec.get("ticks_per_s") or 1_000_000
        rec["msacc_us"] = {k: {s: round(v * 1e6 / per_s) for s, v in sorted(states.items())}
                           for k, states in sorted(ticks.get(name, {}).items())}
        rec["threads"] = {k: len(v) for k, v in sorted(rec["threads"].items())}
        rec["msacc_on_s"] = msacc_on_s(rec)
    return nodes


def msacc_on_s(rec: dict) -> float | None:
    """How long microstate accounting was on: a thread's time in all its states, sleep too, is the time it
    was counted; the normal schedulers' mean (else any thread type's)."""
    us, threads = rec.get("msacc_us") or {}, rec.get("threads") or {}
    kind = "scheduler" if "scheduler" in us else next(iter(us), None)
    if kind is None or not threads.get(kind):
        return None
    return round(sum(us[kind].values()) / threads[kind] / 1e6, 6)


def coverage(rec: dict, whole: bool) -> float:
    """The share of the build msacc counted: 1 when it was on throughout, else its time on over the build's."""
    on, wall = rec.get("msacc_on_s"), rec.get("wall_s")
    if whole or not on or not wall:
        return 1.0
    return min(1.0, on / wall)


# beam's work by activity: (name, the msacc (thread type, state) pairs it sums; "*" is any thread type).
# `other` is apart: on a release that busy-waits it is mostly spinning, not work.
ACTIVITIES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Erlang code", (("*", "emulator"),)),
    ("garbage collection", (("*", "gc"),)),
    ("port I/O", (("*", "port"),)),
    ("file I/O", (("dirty_io_scheduler", "emulator"), ("dirty_io_scheduler", "nif"))),
    ("NIFs", (("scheduler", "nif"), ("dirty_cpu_scheduler", "nif"))),
    ("I/O polling", (("*", "check_io"),)),
    ("aux", (("*", "aux"),)),
)
BUSY_WAIT = "other (busy wait)"


def activity_seconds(rec: dict) -> dict[str, float]:
    """A node's thread seconds per activity (ACTIVITIES), and `other` as BUSY_WAIT; sleep left out."""
    out: dict[str, float] = {}
    for kind, states in (rec.get("msacc_us") or {}).items():
        for state, us in states.items():
            if state == "sleep" or not us:
                continue
            name = BUSY_WAIT if state == "other" else _activity(kind, state)
            out[name] = out.get(name, 0.0) + us / 1e6
    return out


def _activity(kind: str, state: str) -> str:
    """The activity of a thread type's state: a pair named exactly first, then a "*" one, else the state."""
    for pair in ((kind, state), ("*", state)):
        for name, pairs in ACTIVITIES:
            if pair in pairs:
                return name
    return state


# msacc's thread types as the kernel's kinds of beam thread (dragnet.measure.cpu.BEAM_THREADS)
MSACC_TYPES = {"scheduler": "scheduler", "dirty_cpu_scheduler": "dirty_cpu", "dirty_io_scheduler": "dirty_io",
               "aux": "aux", "poll": "poll", "async": "async"}


def cpu_activities(msacc_us: dict[str, dict[str, int]], beam_threads: dict[str, float]) -> dict[str, float]:
    """beam's CPU seconds per activity: each kind of thread's CPU from the kernel (results' cpu.beam_threads),
    divided among the activities in the shares msacc saw that thread type busy in them. msacc's own seconds
    are thread time, waiting for a core or a disk included, so they give the shares only; a kind msacc saw
    idle keeps its CPU under its own name."""
    out: dict[str, float] = {}
    known = set(MSACC_TYPES.values())
    for mtype, kind in MSACC_TYPES.items():
        cpu_s = beam_threads.get(kind) or 0.0
        if cpu_s <= 0:
            continue
        busy = {st: us for st, us in (msacc_us.get(mtype) or {}).items() if st != "sleep" and us > 0}
        total = sum(busy.values())
        if not total:
            out[f"{kind} threads"] = out.get(f"{kind} threads", 0.0) + cpu_s
            continue
        for st, us in busy.items():
            name = BUSY_WAIT if st == "other" else _activity(mtype, st)
            out[name] = out.get(name, 0.0) + cpu_s * us / total
    rest = sum(v for k, v in beam_threads.items() if k not in known)
    if rest > 0:
        out["other beam threads"] = rest
    return out


def work(seconds: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in seconds.items() if k != BUSY_WAIT}


UNSAMPLED = "unsampled"    # reductions of processes that exited between two samples, kind unknown


def reductions_by_kind(rec: dict) -> dict[str, int]:
    """A node's reductions per process kind, and UNSAMPLED: the rest of the node's exact total."""
    out: dict[str, int] = {}
    for key, (reds, *_rest) in (rec.get("reductions") or {}).items():
        k = kind_of(key)
        out[k] = out.get(k, 0) + reds
    missed = reductions_unsampled(rec)
    if missed:
        out[UNSAMPLED] = missed
    return out


def shares(values: dict[str, float]) -> dict[str, float]:
    """Each value's share of their sum (largest first); {} when the sum is 0."""
    total = sum(values.values())
    if total <= 0:
        return {}
    return {k: v / total for k, v in sorted(values.items(), key=lambda kv: -kv[1])}


def reductions_unsampled(rec: dict) -> int | None:
    """The node's reductions the samples missed (processes that exited between two samples)."""
    total = rec.get("reductions_total")
    if total is None:
        return None
    return max(0, total - sum(r for r, *_rest in (rec.get("reductions") or {}).values()))


def summary(record: dict | None, cpu: dict | None = None) -> dict | None:
    """What the outputs show of one build's "beam_activity" entry, per node and all nodes together: the
    thread seconds of work, each activity's share of it, the busy wait apart, and each process kind's
    share of the reductions; with the build's kernel accounting (results' `cpu`, with beam_threads) also
    beam's CPU seconds and their shares by activity (cpu_activities). None without figures."""
    nodes = {n: r for n, r in ((record or {}).get("nodes") or {}).items() if "error" not in r}
    if not nodes:
        return None
    # results recorded before the windows have no msacc_on_ms: msacc was on throughout
    on_ms = (record or {}).get("msacc_on_ms")
    whole = on_ms is None or on_ms >= (record or {}).get("period_ms", 0)
    per_node = {}
    acts: dict[str, float] = {}
    kinds: dict[str, float] = {}
    for name, rec in sorted(nodes.items()):
        # counted part of the time: its thread seconds scaled to the whole build, the shares as they are
        cov = coverage(rec, whole)
        secs = {k: v / cov for k, v in activity_seconds(rec).items()}
        reds = reductions_by_kind(rec)
        per_node[name] = {"work_s": round(sum(work(secs).values()), 6),
                          "busy_wait_s": round(secs.get(BUSY_WAIT, 0.0), 6),
                          "activities": _rounded(shares(work(secs))), "kinds": _rounded(shares(reds)),
                          "unsampled_reductions": reductions_unsampled(rec), "msacc_coverage": round(cov, 4)}
        for k, v in secs.items():
            acts[k] = acts.get(k, 0.0) + v
        for k, v in reds.items():
            kinds[k] = kinds.get(k, 0.0) + v
    out = {"work_s": round(sum(work(acts).values()), 6), "busy_wait_s": round(acts.get(BUSY_WAIT, 0.0), 6),
           "activities": _rounded(shares(work(acts))), "kinds": _rounded(shares(kinds)),
           "msacc_coverage": min(n["msacc_coverage"] for n in per_node.values()), "nodes": per_node}
    threads = (cpu or {}).get("beam_threads")
    if threads:
        msacc: dict[str, dict[str, int]] = {}
        for rec in nodes.values():
            for mtype, states in (rec.get("msacc_us") or {}).items():
                into = msacc.setdefault(mtype, {})
                for st, us in states.items():
                    into[st] = into.get(st, 0) + us
        secs = cpu_activities(msacc, threads)
        out["cpu_s"] = round(sum(secs.values()), 6)
        out["cpu_activities"] = _rounded(shares(secs))
    return out


def merge(summaries: list[dict | None]) -> dict | None:
    """Several builds' summaries (one engine's rounds) as one: activities weighted by each build's work,
    kinds averaged over the builds."""
    got = [s for s in summaries if s]
    if not got:
        return None
    acts: dict[str, float] = {}
    kinds: dict[str, float] = {}
    for s in got:
        for k, v in s["activities"].items():
            acts[k] = acts.get(k, 0.0) + v * s["work_s"]
        for k, v in s["kinds"].items():
            kinds[k] = kinds.get(k, 0.0) + v / len(got)
    n = len(got)
    out = {"builds": n, "work_s": round(sum(s["work_s"] for s in got) / n, 6),
           "busy_wait_s": round(sum(s["busy_wait_s"] for s in got) / n, 6),
           "activities": _rounded(shares(acts)), "kinds": _rounded(shares(kinds))}
    with_cpu = [s for s in got if s.get("cpu_activities")]
    if len(with_cpu) == n:      # beam's CPU by activity only where every build has it
        cpu_acts: dict[str, float] = {}
        for s in with_cpu:
            for k, v in s["cpu_activities"].items():
                cpu_acts[k] = cpu_acts.get(k, 0.0) + v * s["cpu_s"]
        out["cpu_s"] = round(sum(s["cpu_s"] for s in with_cpu) / n, 6)
        out["cpu_activities"] = _rounded(shares(cpu_acts))
    return out


def _rounded(d: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in d.items()}


def why_none(record: dict) -> str:
    """Why a build's entry has no figures, in one line: the reason recorded, else its nodes' errors."""
    if record.get("absent"):
        return record["absent"]
    errors = sorted({f"{n}: {r['error']}" for n, r in (record.get("nodes") or {}).items() if "error" in r})
    return "; ".join(errors) if errors else "no node answered the probe"


def absent(why: str) -> dict:
    """The results entry of a build without the probe: why, in one line."""
    return {"schema": SCHEMA, "nodes": None, "absent": why}
