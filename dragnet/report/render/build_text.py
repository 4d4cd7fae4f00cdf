"""One build's text for the terminal: addview's end-of-run summary, the per-view table, a fault finding.

The figures come from the build stage (measure.poller.analyze, build.per_view.compare, build.fault);
only the words and the layout are here.
"""

from __future__ import annotations

import json

from dragnet.index import per_view as _per_view
from dragnet.index.fault import Finding
from dragnet.index.per_view import Part
from dragnet.measure import poller
from dragnet.measure.poller import BuildFigures
from dragnet.results.record import Build


def _num(x: float | None, fmt: str, unit: str = "") -> str:
    # the unit goes with the number only: a missing value reads "n/a", not "n/ac/s"
    return "n/a" if x is None else format(x, fmt) + unit


def format_average(fig: BuildFigures) -> str:
    """`average = 1614.30c/s (all_tasks) 203.20c/s (one task)`"""
    return (f"average = {_num(fig.average_all_tasks_cps, '.2f', 'c/s')} (all_tasks) "
            f"{_num(fig.average_one_task_cps, '.2f', 'c/s')} (one task)")


def format_total_time(fig: BuildFigures) -> str:
    """`total time = 180s` (CouchDB's task timestamps are whole seconds)."""
    t = fig.total_time_s
    if t is None:
        return "total time = n/a"
    return f"total time = {t:.0f}s" if float(t).is_integer() else f"total time = {t:.1f}s"


def format_compaction(compacted: dict) -> str:
    """One line for a build's report."""
    if compacted.get("error"):
        return f"compaction: {compacted['error']}"
    mib = lambda s, k: f"{((s or {}).get(k) or 0) / 1024 ** 2:,.1f} MiB"   # noqa: E731
    before, after = compacted.get("before"), compacted.get("sizes")
    line = (f"index once compacted = {mib(after, 'file')} (live data {mib(after, 'active')}; right after the build "
            f"{mib(before, 'file')}, live {mib(before, 'active')}), {compacted.get('seconds') or 0:.1f} s")
    return line if compacted.get("settled") else line + f"; not settled after {compacted.get('rounds')} compactions"


def format_update(u: dict) -> str:
    dps = u.get("incremental_docs_per_sec")
    return (f"--update: {u['changes']} changes ({u['edits']} edits, {u['new']} new) in {u['batches']} batches "
            f"written in {u['write_s']:.2f}s; fresh {u['lag_s']:.2f}s after the last write"
            + (f" ({dps:.0f} docs/s incremental)" if dps else "")
            + ("" if u.get("cleaned_up") else "; NOT all writes undone"))


def format_iostat_summary(summary: dict) -> list[str]:
    lines = []
    for dev, e in summary.items():
        if e["r_s"]["avg"] is None:
            continue
        lines.append(f"{dev:<8} r/s avg {e['r_s']['avg']:7.1f} peak {e['r_s']['peak']:7.1f}  "
                     f"w/s avg {e['w_s']['avg']:7.1f}  rkB/s avg {e['rkb_s']['avg']:8.0f}  "
                     f"wkB/s avg {e['wkb_s']['avg']:8.0f}  r_await peak {e['r_await']['peak']:6.2f} ms  "
                     f"aqu-sz peak {e['aqu_sz']['peak']:5.2f}  %util peak {e['util_pct']['peak']:5.1f}")
    return lines


def format_pidstat_summary(summary: dict) -> list[str]:
    """Readable lines, one per family."""
    lines = []
    width = max((len(fam) for fam in summary), default=0)
    for fam, e in summary.items():
        cpu, rss = e["cpu_pct"], e["rss_kb"]
        if cpu["avg"] is None:
            continue
        lines.append(f"{fam:<{width}} {e['processes']:>2} proc  CPU avg {cpu['avg']:6.1f}% peak {cpu['peak']:6.1f}%  "
                     f"RSS avg {rss['avg'] / 1024:7.1f} MB peak {rss['peak'] / 1024:7.1f} MB "
                     f"(largest process {e['rss_kb_single_peak'] / 1024:.1f} MB)  "
                     f"wr {e['kb_wr_s']['avg']:.0f} kB/s  threads {e['threads']['peak']:.0f}")
    return lines


def build_work_line(fig: poller.BuildFigures, q: int | None, n: int | None, nodes: list | None) -> str:
    """The indexing work of the build: changes done over the shard replicas (q x n of them), and a warning
    when fewer replicas' tasks were seen than there are (they finished between two polls)."""
    where = (f"q={q} n={n}" + (f" on {len(nodes)} node{'s' if len(nodes) != 1 else ''}" if nodes else "")
             if q and n else "q/n unknown")
    line = f"indexing work = {fig.done} changes done by {fig.tasks_seen} tasks ({where})"
    if q and n and fig.tasks_seen < q * n:
        line += (f"; only {fig.tasks_seen} of {q * n} shard replicas' tasks were seen: the rest finished "
                 f"between polls (lower --interval)")
    elif q and n and fig.tasks_seen > q * n:
        # every issue-49 target had one: the compaction daemon's copy of a shard's index swapped in mid-build
        # restarts its updater, which maps documents it had mapped (docs/studies/forecast-growth.md)
        extra = fig.tasks_seen - q * n
        line += (f"; {extra} task{'s' if extra > 1 else ''} more than the {q * n} shard replicas: an indexer "
                 f"started again and indexed documents again (as when a compaction swaps its copy in "
                 f"mid-build), work the changes done and map calls include")
    return line


def format_report(res: dict, figures: poller.BuildFigures | None = None) -> list[str]:
    """The readable end-of-run summary."""
    fig = figures or poller.analyze(res["polls"], res["view"]["ddoc"])
    s = res["summary"]
    fig_s = Build.of(res)
    lines = [format_average(fig), format_total_time(fig)]
    if fig_s.wall_s is not None:
        dps = fig_s.docs_per_s
        lines.append(f"wall time = {fig_s.wall_s:.1f}s (trigger to view answering), "
                     f"{dps:.1f} docs/s by wall time" if dps else f"wall time = {fig_s.wall_s:.1f}s")
    reissued = (res.get("trigger") or {}).get("reissued_at") or []
    if reissued:
        lines.append(f"the view request was sent {len(reissued)} more time(s) after CouchDB's own request "
                     f"timeout ([fabric] request_timeout); the build went on meanwhile")
    lines.append(f"docs = {s.get('docs')}  rows emitted = {s.get('rows')}  "
                 f"changes seen = {fig.changes} over {fig.tasks_seen} indexer tasks, {fig.shards} shards")
    db = res.get("db") or {}
    lines.append(build_work_line(fig, db.get("shards"), db.get("replicas"), db.get("nodes")))
    if s.get("exceptions_logged") is not None:
        lines.append(f"exceptions logged by the map function = {s['exceptions_logged']}")
    if s.get("qs_process_errors"):
        lines.append(f"query server: {s['qs_process_errors']} process error(s), {s.get('qs_process_starts')} "
                     "process(es) started (CouchDB restarts a query server that fails)")
    if s.get("map_calls") == 0:
        lines.append("query server: no map calls counted (native Erlang views run inside beam)")
    elif s.get("map_calls") is not None:
        per = s.get("map_us_per_call")
        lines.append(f"query server: {s['map_calls']} map calls" + (f", {per:.0f} µs per call" if per else ""))
    if fig.other_tasks_ignored:
        lines.append(f"(ignored {fig.other_tasks_ignored} observations of compaction tasks on this design doc)")
    if fig.per_shard:
        lines.append("")
        # the node column only on a cluster (a single node reports nonode@nohost or its one name)
        width = max(len(sh.node) for sh in fig.per_shard) if len({sh.node for sh in fig.per_shard}) > 1 else 0
        node = (lambda n: f"{n:<{width}} ") if width else (lambda n: "")
        lines.append(f"{node('node')}{'shard':<19} {'tasks':>5} {'changes':>8} {'done':>8} {'seconds':>8} "
                     f"{'c/s':>9}")
        for sh in fig.per_shard:
            cps = f"{sh.cps:.1f}" if sh.cps is not None else "n/a"
            lines.append(f"{node(sh.node)}{sh.shard:<19} {len(sh.pids):>5} {sh.changes:>8} {sh.done:>8} "
                         f"{sh.seconds:>8.0f} {cps:>9}")
    compacted = (res.get("sizes") or {}).get("compacted")
    if compacted:
        lines.append(format_compaction(compacted))
    if res.get("update"):
        lines.append(format_update(res["update"]))
    io = res.get("iostat") or {}
    if io.get("summary"):
        lines.append(f"iostat on the data's disk ({io.get('data_dir')}):")
        lines += ["  " + x for x in format_iostat_summary(io["summary"])]
    elif io.get("absent"):
        lines.append(f"iostat: none recorded: {io['absent']}")
    split = format_split(res)
    if split:
        lines.append(split)
    from dragnet.report.beam_activity import build_lines

    lines += build_lines(res)
    ps = (res.get("pidstat") or {}).get("summary")
    if ps:
        lines.append("")
        lines += format_pidstat_summary(ps)
    elif (res.get("pidstat") or {}).get("note"):
        lines.append(f"pidstat: {res['pidstat']['note']}")
    for name, node_ps in ((res.get("pidstat") or {}).get("per_node") or {}).items():
        lines.append(f"node {name}:")
        lines += ["  " + line for line in format_pidstat_summary(node_ps)]
    return lines


def format_split(res: dict) -> str | None:
    """Where this build's interval × cores went, from the kernel's accounting (report.share), or None for a
    file without it."""
    from dragnet.report import share

    split = share.split_of(res)
    if isinstance(split, str):
        return None if split.startswith(share.NO_KERNEL) else f"where the time goes: no split ({split})"
    return "where the time goes: " + share.split_line("", share.median_split([split]))[2:].replace(
        " (median of 1)", "")


def format_table(rows: list[Part]) -> list[str]:
    def f(x: float | None, spec: str) -> str:
        return format(x, spec) if x is not None else "n/a"

    lines = [f"{'view':<24} {'wall s':>8} {'tasks s':>8} {'docs/s':>10} {'of whole':>9}"]
    for r in rows:
        share = f"{r.share_of_whole * 100:.0f}%" if r.share_of_whole is not None else "n/a"
        lines.append(f"{r.view:<24} {f(r.wall_time_s, '.2f'):>8} {f(r.total_time_s, '.2f'):>8} "
                     f"{f(r.docs_per_sec, '.1f'):>10} {share:>9}")
    saving = _per_view.shared_pass_saving_s(rows)
    if saving is not None:
        lines.append(f"views built alone take {saving:+.2f}s against the single pass of the whole design doc")
    return lines


def describe_finding(f: Finding | dict) -> list[str]:
    """Readable lines for a finding: its class and reason, then the smallest example."""
    d = f.as_dict() if isinstance(f, Finding) else f
    dump = lambda v: json.dumps(v, ensure_ascii=False)[:300]  # noqa: E731
    lines = [f"{d['query']}: {d['differences']} × {d['cls']}: {d['reason']}"]
    ex = d.get("example") or {}
    if ex.get("values"):
        lines.append(f"  smallest example: values {dump(ex['values'])}")
        lines.append(f"    {ex['first']} = {dump(ex['first_result'])}")
        lines.append(f"    {ex['second']} = {dump(ex['second_result'])}")
    elif ex.get("first"):
        lines.append(f"  {ex['first']} = {dump(ex['first_result'])}; {ex['second']} = {dump(ex['second_result'])}")
    elif ex.get("answers"):
        lines.append(f"  document {d.get('where')} mapped {len(ex['answers'])} times: "
                     + " / ".join(dump(a) for a in ex["answers"][:3]))
    return lines
