"""Index-build rates from raw `GET /_active_tasks` polls (pure: no I/O).

A poll is `{"t": <unix seconds>, "tasks": <the raw /_active_tasks array>}`. Only tasks with
`type == "indexer"` and our design document count: CouchDB's compactor runs `view_compaction` tasks for
the same design document during a build, and counting them inflates the rate (842 -> 1535 c/s in the
javascript recording).

Definitions (the 2017 metrics, made precise):
- a task is *usable* in a poll when `updated_on > started_on`; its rate is
  `changes_done / (updated_on - started_on)` (cumulative average since the task started);
- **all tasks** rate of a poll = sum of the rates of its usable tasks;
- **one task** rate of a poll = rate of the usable task with the lowest Erlang pid in that poll. The original
  per-shard indexers have lower pids than the catch-up indexers that appear after a compaction swap, so this
  follows an original shard task while one runs (the 2017 script took whichever task was listed first,
  which jumps between shards);
- averages are over polls with at least one usable task (one-task average likewise);
- total time = last `updated_on` minus first `started_on` over all our indexer tasks.
Tasks are keyed by `pid`: a shard can get a second indexer task (catch-up after compaction swaps its
index); its work is kept in the totals and in that shard's row.
- *done* work: a task that has left `/_active_tasks` (absent from a later poll) finished its run, so it did
  its `total_changes` (or more) even when the last poll that saw it showed fewer `changes_done`: small
  shards finish between polls. `changes` stays what the polls saw; `done` credits finished tasks. A task
  that started and finished between two polls is never seen: `tasks_seen` below q × n says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Iterable

_PID = re.compile(r"<(\d+)\.(\d+)\.(\d+)>")


def pid_key(pid: str) -> tuple:
    """Sort key of an Erlang pid string '<0.933.0>' (numeric, so <0.1595.0> sorts after <0.933.0>)."""
    m = _PID.fullmatch(str(pid).strip())
    return (0, tuple(int(x) for x in m.groups())) if m else (1, str(pid))


def ddoc_id(name: str) -> str:
    return name if name.startswith("_design/") else f"_design/{name}"


def shard_range(database: str) -> str:
    """'shards/e0000000-ffffffff/decl.1795257200' -> 'e0000000-ffffffff' (whole name if not a shard)."""
    parts = str(database).split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "shards" else str(database)


def indexer_tasks(tasks: Iterable[dict], ddoc: str) -> list[dict]:
    """Our indexer tasks: `type == "indexer"` for this design document (compaction tasks excluded)."""
    want = ddoc_id(ddoc)
    return [t for t in tasks if isinstance(t, dict) and t.get("type") == "indexer"
            and t.get("design_document") == want]


def task_key(task: dict) -> tuple[str, str]:
    """A task's identity across polls: (node, pid), as a pid's text repeats across a cluster's nodes."""
    return str(task.get("node") or ""), str(task.get("pid"))


def task_rate(task: dict) -> float | None:
    """changes_done / (updated_on - started_on), or None when the task has not updated since it started."""
    try:
        span = float(task["updated_on"]) - float(task["started_on"])
        done = float(task["changes_done"])
    except (KeyError, TypeError, ValueError):
        return None
    return done / span if span > 0 else None


@dataclass
class PollRates:
    t: float
    tasks: int                   # our indexer tasks in the poll
    usable: int                  # of which updated_on > started_on
    all_tasks_cps: float | None
    one_task_cps: float | None
    one_task_pid: str | None
    changes_done: int            # summed over our tasks in this poll
    total_changes: int


def poll_rates(poll: dict, ddoc: str) -> PollRates:
    ours = indexer_tasks(poll.get("tasks") or [], ddoc)
    rated = [(t, task_rate(t)) for t in ours]
    usable = [(t, r) for t, r in rated if r is not None]
    one = min(usable, key=lambda tr: pid_key(tr[0].get("pid", ""))) if usable else None
    return PollRates(
        t=float(poll.get("t", 0.0)),
        tasks=len(ours),
        usable=len(usable),
        all_tasks_cps=math.fsum(r for _, r in usable) if usable else None,
        one_task_cps=one[1] if one else None,
        one_task_pid=one[0].get("pid") if one else None,
        changes_done=sum(int(t.get("changes_done") or 0) for t in ours),
        total_changes=sum(int(t.get("total_changes") or 0) for t in ours),
    )


@dataclass
class TaskState:
    """The latest observation of one indexer task (by pid)."""

    pid: str
    shard: str
    node: str               # the task's CouchDB node (a cluster runs a replica of one range per node)
    changes_done: int
    total_changes: int
    started_on: float
    updated_on: float
    first_seen: float
    last_seen: float
    finished: bool = False  # absent from a later poll: it ran to its end

    @property
    def done(self) -> int:
        """Changes this task processed: its total_changes once finished, else what was last seen."""
        return max(self.changes_done, self.total_changes) if self.finished else self.changes_done


class Tracker:
    """Feeds polls one by one; remembers every task of our ddoc by pid, including finished ones.

    Used live (progress bar) and afterwards (totals), so both agree.
    """

    def __init__(self, ddoc: str):
        self.ddoc = ddoc_id(ddoc)
        self.tasks: dict[tuple[str, str], TaskState] = {}  # by (node, pid): pid text repeats across nodes
        self.polls = 0
        self.active = 0           # our indexer tasks in the latest poll
        self.ignored_other = 0    # observations of other task types on our ddoc (e.g. view_compaction)

    def add(self, poll: dict) -> None:
        self.polls += 1
        raw = poll.get("tasks") or []
        ours = indexer_tasks(raw, self.ddoc)
        self.ignored_other += sum(1 for t in raw if isinstance(t, dict) and t.get("type") != "indexer"
                                  and t.get("design_document") == self.ddoc)
        self.active = len(ours)
        now = float(poll.get("t", 0.0))
        present = {task_key(t) for t in ours}
        for key, state in self.tasks.items():
            if key not in present:
                state.finished = True
        for t in ours:
            node, pid = task_key(t)
            prev = self.tasks.get((node, pid))
            self.tasks[(node, pid)] = TaskState(
                pid=pid, shard=shard_range(t.get("database", "")), node=node,
                # changes_done never goes down for a pid; max() guards against reordering
                changes_done=max(int(t.get("changes_done") or 0), prev.changes_done if prev else 0),
                total_changes=int(t.get("total_changes") or 0),
                started_on=float(t.get("started_on", 0)),
                updated_on=max(float(t.get("updated_on", 0)), prev.updated_on if prev else 0.0),
                first_seen=prev.first_seen if prev else now, last_seen=now)

    @property
    def seen(self) -> bool:
        return bool(self.tasks)

    @property
    def changes_done(self) -> int:
        return sum(s.changes_done for s in self.tasks.values())

    @property
    def done(self) -> int:
        """Changes processed, finished tasks credited with their total_changes (see the module doc)."""
        return sum(s.done for s in self.tasks.values())

    @property
    def total_changes(self) -> int:
        # a task can finish with changes_done > total_changes (4999 / 4998): count what was done
        return sum(max(s.total_changes, s.changes_done) for s in self.tasks.values())

    @property
    def first_started_on(self) -> float | None:
        return min((s.started_on for s in self.tasks.values()), default=None)

    @property
    def last_updated_on(self) -> float | None:
        return max((s.updated_on for s in self.tasks.values()), default=None)


@dataclass
class ShardFigures:
    shard: str
    node: str
    pids: list[str]
    changes: int            # last changes_done seen, summed over the shard's tasks
    done: int               # changes processed: finished tasks count their total_changes
    total_changes: int      # summed total_changes of the shard's tasks (catch-up tasks add theirs)
    started_on: float
    updated_on: float
    seconds: float          # last updated_on - first started_on of the shard
    cps: float | None


@dataclass
class BuildFigures:
    ddoc: str
    polls: int
    polls_with_tasks: int
    polls_used_all: int
    polls_used_one: int
    average_all_tasks_cps: float | None
    average_one_task_cps: float | None
    first_started_on: float | None
    last_updated_on: float | None
    total_time_s: float | None
    changes: int
    total_changes: int
    tasks_seen: int
    done: int               # changes processed, finished tasks credited (sum of per_shard done)
    shards: int             # distinct shard ranges (a cluster has n replicas of each: per_shard rows)
    max_concurrent_tasks: int
    other_tasks_ignored: int
    per_poll: list[PollRates] = field(default_factory=list)
    per_shard: list[ShardFigures] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def per_shard(tracker: Tracker) -> list[ShardFigures]:
    groups: dict[tuple[str, str], list[TaskState]] = {}
    for s in tracker.tasks.values():
        groups.setdefault((s.shard, s.node), []).append(s)
    rows = []
    for shard, node in sorted(groups):
        ts = sorted(groups[(shard, node)], key=lambda s: pid_key(s.pid))
        start, end = min(s.started_on for s in ts), max(s.updated_on for s in ts)
        changes = sum(s.changes_done for s in ts)
        secs = end - start
        rows.append(ShardFigures(shard=shard, node=node, pids=[s.pid for s in ts], changes=changes,
                                 done=sum(s.done for s in ts),
                                 total_changes=sum(s.total_changes for s in ts), started_on=start,
                                 updated_on=end, seconds=secs, cps=changes / secs if secs > 0 else None))
    return rows


def analyze(polls: Iterable[dict], ddoc: str) -> BuildFigures:
    """All figures of one build from its raw polls."""
    tracker = Tracker(ddoc)
    rates = []
    for poll in polls:
        tracker.add(poll)
        rates.append(poll_rates(poll, ddoc))
    all_r = [r.all_tasks_cps for r in rates if r.all_tasks_cps is not None]
    one_r = [r.one_task_cps for r in rates if r.one_task_cps is not None]
    first, last = tracker.first_started_on, tracker.last_updated_on
    shards = per_shard(tracker)
    return BuildFigures(
        ddoc=tracker.ddoc, polls=len(rates), polls_with_tasks=sum(1 for r in rates if r.tasks),
        polls_used_all=len(all_r), polls_used_one=len(one_r),
        average_all_tasks_cps=math.fsum(all_r) / len(all_r) if all_r else None,
        average_one_task_cps=math.fsum(one_r) / len(one_r) if one_r else None,
        first_started_on=first, last_updated_on=last,
        total_time_s=(last - first) if first is not None else None,
        changes=tracker.changes_done, total_changes=tracker.total_changes, tasks_seen=len(tracker.tasks),
        done=tracker.done,
        shards=len({r.shard for r in shards}), max_concurrent_tasks=max((r.tasks for r in rates), default=0),
        other_tasks_ignored=tracker.ignored_other, per_poll=rates, per_shard=shards)
