"""Bench axes: one model for every dimension a bench varies, and the one planner over their product.

An Axis has a name, values, how a value is applied (`how`), how it labels a run, and its own apply,
check and restart behaviour. Languages, storage and scenarios are axes of the plan (storage and scenarios
are PlanAxis records, dragnet/axes/storage.py and scenario_axis.py, whose hooks the bench calls); couchdb,
cpus, q, config, ddoc and load come with their own modules
(dragnet/axes/<name>.py), whose axes dragnet.bench.switch applies generically. The planner takes the product of any
axes and interleaves every combination within each round; the Erlang baseline opens every combination, so
each run has a baseline of the same combination and round (ratios() pairs them).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from dragnet.errors import UsageError
from dragnet.results.record import combination_label  # noqa: F401  (the axes beyond the built-in ones)

# how a value is applied
LABEL = "label"          # nothing to apply: the value only names the run (language, size)
LIVE = "live"            # set on the running CouchDB (a _config setting)
RESTART = "restart"      # the managed CouchDB restarts (storage, a CouchDB release, a cpuset)
CONTAINER = "container"  # the container is recreated with other settings (docker scenarios, image, cpuset)
REFILL = "refill"        # another database filled from the same data (q)
BESIDE = "beside"        # something runs beside the build (an application load): nothing to apply before it
AROUND = "around"        # the build runs inside the value (a limit, a cache state): nothing to apply before it


def parse_list(text: str | Sequence[str] | None, what: str) -> list[str]:
    """'a,b, c' -> ['a','b','c'] without duplicates, order kept."""
    if text is None:
        return []
    items = text.split(",") if isinstance(text, str) else [x for t in text for x in t.split(",")]
    out: list[str] = []
    for it in (x.strip() for x in items):
        if not it:
            continue
        if it in out:
            raise UsageError(f"{what}: {it!r} given twice")
        out.append(it)
    return out


@dataclass
class Axis:
    """One dimension of a bench: its values, how a value is applied (`how`, one of the constants above),
    whether it stays outside the rounds, how a value names runs (result file names, manifests, reports),
    and the axis's own behaviour, which dragnet.bench.switch.AxisSwitcher (passed as `ctx`) calls per run:

    - `restart(value, ctx)`: RESTART/CONTAINER axes: the settings of a restart onto the value
      (dragnet.bench.managed.restart_on's keywords; dicts of several axes are merged). One restart covers every
      restart axis that changed; undoing is the restart onto the CouchDB the bench found.
    - `running(value, ctx)`: RESTART/CONTAINER axes: whether the node already runs with the value.
    - `apply(value, ctx)`: LIVE/REFILL axes: set the value on the running node (a LIVE axis undoes itself
      through ctx.applied, put back in the bench's finally; a REFILL axis sets ctx.build_db).
    - `check(value, ctx)`: after a restart or apply: what was checked (kept in ctx.checks), or DragnetError.
      With `check_after_build`, also after each build (query servers exist only then).
    - `beside(value, ctx)`: BESIDE axes: what runs beside the run's build (handed to the build), or None.
    - `around(value, ctx, build)`: AROUND axes: runs `build` (no argument, returns the results dict) inside
      the value, as a scenario does, and returns its result.
    - `check_once(ctx)`: before any build, what only the running bench can tell (its URL), or UsageError.

    Language, storage, scenario and size are label axes of the plan (storage and scenario applied through
    their PlanAxis records, below). The CouchDB axes live in dragnet/axes/<name>.py, each with an `axis(...)` factory;
    each module's KIND (an AxisKind) is listed in dragnet.axes.kinds (docs/axes.md: adding an axis)."""

    name: str
    values: list[str]
    how: str = LABEL
    outer: bool = False        # values stay outside the rounds (each one costs a restart and an import)
    label: Callable[[str], str] = str
    restart: Callable[[str, Any], dict] | None = None
    running: Callable[[str, Any], bool] | None = None
    apply: Callable[[str, Any], None] | None = None
    check: Callable[[str, Any], Any] | None = None
    check_after_build: bool = False
    record_as: str | None = None   # with check_after_build: the manifest run key its check is kept under
    beside: Callable[[str, Any], Any] | None = None
    around: Callable[[str, Any, Callable[[], dict]], dict] | None = None
    check_once: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        if not self.values:
            raise UsageError(f"axis {self.name}: no value")
        if len(set(self.values)) != len(self.values):
            raise UsageError(f"axis {self.name}: a value given twice")


# the plan order of the kinds of application: restarts outermost within a round, then databases, then live
# settings, label axes (design-doc revisions) fastest
_HOW_ORDER = {RESTART: 0, CONTAINER: 0, REFILL: 1, LIVE: 2, BESIDE: 3, AROUND: 3, LABEL: 3}


def in_plan_order(axes: Iterable[Axis]) -> list[Axis]:
    return sorted(axes, key=lambda a: _HOW_ORDER[a.how])


@dataclass(frozen=True)
class Option:
    """One command-line option of an axis kind; dragnet.cli.options.axis_options builds it for every command
    that takes the kind."""

    flags: tuple[str, ...]
    dest: str
    metavar: str
    help: str
    multiple: bool = False


@dataclass(frozen=True)
class AxisKind:
    """A kind of bench axis as the CLI and the bench know it: one record in each axis module, listed once in
    dragnet.axes.kinds.KINDS. Everything the bench does for it comes from here; the bench names no axis.

    - `parse(raw)`: its options' raw values (by dest) to its values; empty when it is not varied.
    - `make(values, backend)`: its axes (one, or one per setting).
    - `restarts`: a value restarts CouchDB (a release, a cpuset): the bench needs a CouchDB it manages.
    - `check_first(values, backend, env)`: checked before the bench starts anything (a release exists).
    - `start_on(values, backend)`: the keywords of the first CouchDB the bench starts itself.
    - `restored_as`: the manifest key under which the bench records what it put back at the end.
    - `designs`: the values name design documents the runs build (`--ddoc A --ddoc B`).
    - `check_start(values, backend, env, found)`: when the bench starts its own CouchDB, checked before it
      does (found: every kind's check_first, by kind name), or UsageError.
    - `up_front(values, ctx, couch)`: before any build, on the running node (ctx: the AxisSwitcher, whose
      `known`, `key_sources` and `lacking` the kinds share), or UsageError.
    - `not_applicable(values, run_axes, ctx)`: why a planned run cannot be built with these values (it is
      recorded as not applicable, the bench goes on), or None.
    - `recorded(run_axes)`: a run's axes as the results record them (`bench.axes`), e.g. settings joined."""

    name: str
    options: tuple[Option, ...]
    parse: Callable[[dict], Any]
    make: Callable[[Any, str | None], list[Axis]]
    restarts: bool = False
    check_first: Callable[[Any, str | None, Any], Any] | None = None
    start_on: Callable[[Any, str | None], dict] | None = None
    restored_as: str | None = None
    designs: bool = False
    check_start: Callable[[Any, str | None, Any, dict], None] | None = None
    up_front: Callable[[Any, Any, Any], None] | None = None
    not_applicable: Callable[[Any, dict, Any], str | None] | None = None
    recorded: Callable[[dict], dict] | None = None


@dataclass(frozen=True)
class Point:
    """One planned build: its round and the value of every axis."""

    index: int
    repeat: int
    values: dict = field(default_factory=dict)


def plan_product(axes: Sequence[Axis], repeats: int, shuffle_seed: int | None = None,
                 keep_first: str | None = None) -> list[Point]:
    """Every build in order. Outer axes (in their order) enclose the rounds; inside each round every
    combination of the other axes comes once, the last axis varying fastest (A B C A B C …).

    With shuffle_seed, each round's combinations come in a fresh random order (seeded: the plan is
    reproducible), so no value is always built first; `keep_first`, a value of the last axis (the Erlang
    baseline), still opens each combination of the other axes."""
    if repeats < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeats}")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise UsageError(f"axes named twice: {names}")
    outer = [a for a in axes if a.outer]
    inner = [a for a in axes if not a.outer]
    points: list[Point] = []
    for o in itertools.product(*(a.values for a in outer)):
        for r in range(repeats):
            combos = list(itertools.product(*(a.values for a in inner)))
            if shuffle_seed is not None and combos:
                combos = _shuffled(combos, random.Random(f"{shuffle_seed}-{o}-{r}"), keep_first)
            for i in combos:
                values = dict(zip([a.name for a in outer], o)) | dict(zip([a.name for a in inner], i))
                points.append(Point(len(points), r, {n: values[n] for n in names}))
    return points


def _shuffled(combos: list[tuple], rng: random.Random, keep_first: str | None) -> list[tuple]:
    """Groups of the last axis (per combination of the others) in random order, each group shuffled but
    keep_first, when present, at its head."""
    groups: dict[tuple, list[tuple]] = {}
    for c in combos:
        groups.setdefault(c[:-1], []).append(c)
    keys = list(groups)
    rng.shuffle(keys)
    out = []
    for k in keys:
        g = groups[k]
        head = [c for c in g if c[-1] == keep_first]
        rest = [c for c in g if c[-1] != keep_first]
        rng.shuffle(rest)
        out += head + rest
    return out


def combination_key(run: dict, exclude: str = "language") -> tuple:
    """What a run shares with its baseline: every axis value but `exclude`, and the round.
    run is a manifest entry (storage, scenario, repeat and the extra axes under "axes")."""
    extra = run.get("axes") or {}
    return (run.get("storage"), run.get("scenario", ""), run.get("repeat"),
            tuple(sorted((k, str(v)) for k, v in extra.items() if k != exclude)))


def pair_baselines(runs: Iterable[dict], baseline_name: str, key: str) -> dict[int, float | None]:
    """index -> run[key] of the successful baseline of the same combination and round (None when it has
    none)."""
    runs = list(runs)
    base = {combination_key(r): r.get(key) for r in runs
            if r.get("language") == baseline_name and r.get("status") == "ok"}
    return {r["index"]: base.get(combination_key(r)) for r in runs}


def run_axes(run: dict, size: int | None = None) -> dict:
    """The `bench.axes` of a manifest entry (the results contract): every axis value that labels the run."""
    out: dict = {"language": run.get("language"), "storage": run.get("storage"),
                 "scenario": run.get("scenario", ""), "size": size}
    out.update(run.get("axes") or {})
    return out


def file_stem(run: dict, labels: dict[str, Callable[[str], str]] | None = None) -> str:
    """A results file's name without .json: index, storage, scenario, the extra axes (named by `labels`,
    else NAME-VALUE), round, language."""
    from dragnet.results.addview_results import slug

    labels = labels or {}
    parts = [f"{run['index']:03d}", slug(run["storage"])]
    if run.get("scenario"):
        parts.append(slug(run["scenario"]))
    for name, value in (run.get("axes") or {}).items():
        short = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]     # config:view_updater/gc_interval_docs
        parts.append(slug(labels[name](str(value)) if name in labels else f"{short}-{value}"))
    parts += [f"r{run['repeat']}", slug(run["language"])]
    return "-".join(parts)



def merge_restart(into: dict, settings: dict) -> dict:
    """Several restart axes' settings as one restart's: dict values (ini settings, container limits) merged."""
    for k, v in settings.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k] = {**into[k], **v}
        else:
            into[k] = v
    return into



class PlanAxis:
    """An axis the plan carries under a key of its own in every run and result (storage, scenario: the
    results contract names them), applied through these hooks, which the bench calls for every such axis in
    dragnet.axes.kinds.PLANNED order; the bench itself names none of them. One object per bench (it keeps
    the bench's state of the axis); `ctx` is the running bench (its `config`, `inst`, `couch`, `switcher`,
    `axis_opts`, `on_event`, `env`, `manifest`, and `restart_on(storage, **keywords)`). A hook left as it is
    does nothing."""

    name = ""
    outer = False     # its values enclose the rounds (each one a restart and an import)

    def values(self, ctx) -> list[str]:
        """Its values in plan order ([""] when the bench does not vary it)."""
        return [""]

    def check(self, ctx) -> None:
        """Before the plan, once the bench knows its CouchDB: what cannot be done (UsageError)."""

    def start_on(self, ctx) -> dict:
        """Keywords of the CouchDB the bench starts itself (dragnet.bench.managed.start_managed)."""
        return {}

    def restart_keywords(self, ctx) -> dict:
        """Keywords an outer axis's restart onto its next value adds (dragnet.bench.managed.restart_on)."""
        return {}

    def manifest(self, ctx) -> dict:
        """What the manifest records of the axis (its keys)."""
        return {}

    def enter(self, value, ctx) -> None:
        """An outer axis: make the node hold `value` before its runs (before the data is imported)."""

    def restarted(self, ctx) -> None:
        """An outer axis's value restarted the node: whatever this axis knew of it is fresh again."""

    def prepare(self, ctx) -> None:
        """Once per outer value, the data imported: refuse what cannot be enforced before any build."""

    def before(self, run: dict, ctx) -> dict | None:
        """Before a run's build: make the node hold the run's value; the run's result when the node could
        not be started with it (the build does not run), else None."""
        return None

    def build_keywords(self, run: dict) -> dict:
        """Keywords the run's build takes from this axis (the build's own iostat off, when it records its own)."""
        return {}

    def around(self, run: dict, ctx, couch, db: str, ddoc: str, build: Callable[[], dict]) -> dict | None:
        """Runs the build inside the run's value (a scenario's limits) and returns its result, or None
        when the value needs nothing around the build."""
        return None

    def on_oom(self, ctx) -> bool:
        """CouchDB was OOM-killed in a build: True when this axis brings it back itself (before the next
        run), else the bench restarts it at once."""
        return False

    def changed(self, ctx, found) -> bool:
        """At the end: whether the node the bench found (found.storage, found.limits) must be restarted as
        it was."""
        return False
