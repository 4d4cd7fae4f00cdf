"""Applies a bench's CouchDB axes (--couchdb, --cpus, --q, --config, --config-restart) before each planned run.

Everything is checked before any build (check_up_front; check_before_start before a bench starts its own
CouchDB): images and release directories, core counts, config keys against what each CouchDB's code reads
and its default.ini names (its version's catalogue) and its own default.ini, and each live config value set
once on the node and put back. Per run, `switch` asks each axis (dragnet.axes.model.Axis, built by its own
module) what to do: one restart when any restart axis changed (their settings merged), then the refill and
live axes applied, and each axis's check. `finish` puts back every live setting changed and `restore_instance` restarts onto
the CouchDB the bench found; the bench calls both in its finally block (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from typing import Any, Callable

from dragnet.axes import config as axis_config
from dragnet.axes import couchdb as axis_couchdb
from dragnet.axes.model import CONTAINER, LIVE, REFILL, RESTART, Axis, in_plan_order, merge_restart
from dragnet.couchdb.client import Couch, connect
from dragnet.errors import UsageError


class AxisOptions:
    """The values of every axis kind the command line varied (dragnet.axes.kinds.KINDS), by kind name; a kind
    left out is not varied. `AxisOptions(q=["2", "8"])` names them as keywords."""

    def __init__(self, values: dict[str, Any] | None = None, **named: Any):
        from dragnet.axes.kinds import KINDS

        self.kinds = KINDS
        self.values = {k: v for k, v in {**(values or {}), **named}.items() if v}
        unknown = set(self.values) - {k.name for k in self.kinds}
        if unknown:
            raise UsageError(f"unknown bench axis: {', '.join(sorted(unknown))}")

    @classmethod
    def from_options(cls, raw: dict[str, Any], **values: Any) -> "AxisOptions":
        """From the options the CLI parsed (by dest, dragnet.cli.options.axis_options), plus values given
        otherwise (the ddoc revisions)."""
        from dragnet.axes.kinds import KINDS

        return cls({**{k.name: k.parse(raw) for k in KINDS if k.options}, **values})

    def get(self, name: str) -> Any:
        """A kind's values by name; not varied: an empty list."""
        return self.values.get(name, [])

    def varied(self):
        return [(k, self.values[k.name]) for k in self.kinds if k.name in self.values]

    @property
    def any(self) -> bool:
        return bool(self.values)

    @property
    def restarts(self) -> bool:
        """Whether a varied axis restarts CouchDB (a release, a cpuset)."""
        return any(k.restarts for k, _ in self.varied())

    def check_first(self, backend: str | None, env: Any) -> dict:
        """What each varied axis checks before anything is started; what each check found, by kind."""
        return {k.name: k.check_first(v, backend, env) for k, v in self.varied() if k.check_first is not None}

    def start_on(self, backend: str | None) -> dict:
        """The keywords of the CouchDB a bench starts itself: on each axis's first value."""
        out: dict = {}
        for k, v in self.varied():
            if k.start_on is not None:
                out.update(k.start_on(v, backend))
        return out

    def restored_as(self) -> list[str]:
        """The manifest keys of what the bench puts back at the end."""
        return [k.restored_as for k, _ in self.varied() if k.restored_as]

    def check_start(self, backend: str | None, env: Any, found: dict) -> None:
        """Before the bench starts its own CouchDB: each varied kind's check of what it will start."""
        for k, v in self.varied():
            if k.check_start is not None:
                k.check_start(v, backend, env, found)

    def up_front(self, ctx: Any, couch: Couch) -> None:
        """Before any build, on the running node: each varied kind's checks (in dragnet.axes.kinds' order)."""
        for k, v in self.varied():
            if k.up_front is not None:
                k.up_front(v, ctx, couch)

    def not_applicable(self, run_axes: dict, ctx: Any) -> str | None:
        """Why a planned run cannot be built (a varied kind says so), or None."""
        for k, v in self.varied():
            why = k.not_applicable(v, run_axes, ctx) if k.not_applicable is not None else None
            if why is not None:
                return why
        return None

    def recorded(self, run_axes: dict) -> dict:
        """A run's axes as bench.axes records them (each kind's `recorded`)."""
        return contract_axes(run_axes, self.kinds)

    def designs(self) -> dict:
        """label -> design document of the varied design-doc axis (several --ddoc), else {}."""
        return next((v for k, v in self.varied() if k.designs), {})

    def design_label(self, run_axes: dict | None) -> Any:
        """The design-doc revision a run's axes name, or None."""
        return next(((run_axes or {}).get(k.name) for k in self.kinds if k.designs), None)

    def axes(self, backend: str | None) -> list[Axis]:
        """In plan order: restarts outermost within a round, then databases, then live settings, design-doc
        revisions fastest (adding an axis: its module's KIND in dragnet.axes.kinds, docs/axes.md)."""
        return in_plan_order(a for k, v in self.varied() for a in k.make(v, backend))


def contract_axes(run_axes: dict, kinds=None) -> dict:
    """A run's extra axes as bench.axes records them: each axis kind's `recorded` (settings joined under
    "config")."""
    if kinds is None:
        from dragnet.axes.kinds import KINDS as kinds
    out = dict(run_axes)
    for k in kinds:
        if k.recorded is not None:
            out = k.recorded(out)
    return out


def check_before_start(opts: AxisOptions, backend: str, env: Any, starts: bool) -> None:
    """Before a bench starts or restarts anything: each axis's own checks (a --couchdb value is an image or a
    release), and, when the bench starts its own CouchDB, each axis's check of what it will start (the
    --config keys against what that install knows), so a mistake costs no start. What only the running node
    can tell (the settings it has, the values it takes) is left to AxisSwitcher.check_up_front."""
    found = opts.check_first(backend, env)
    if starts:
        opts.check_start(backend, env, found)


class AxisSwitcher:
    def __init__(self, opts: AxisOptions, *, url: str, db: str, env: Any, inst: Any, data: str | None,
                 n: int | None, data_size: Callable[[], int], on_event: Callable[[str, dict], None]):
        self.opts, self.url, self.db, self.env, self.inst = opts, url, db, env, inst
        self.data, self.n, self.data_size, self.on_event = data, n, data_size, on_event
        self.applied = axis_config.Applied()
        self.current: dict[str, str] = {}        # restart-axis values the node runs with now
        self.lacking: dict[str, list[str]] = {}  # config name -> CouchDB values without that setting
        self.installs: dict[str, str] = {}       # couchdb value -> its default.ini (checked up front)
        self.known: dict[str, set] = {}          # install or version -> the config keys it knows
        self.key_sources: dict[str, str] = {}    # version -> what its config keys were checked against
        self.versions: dict | None = None
        self.checks: dict = {}
        self.axes = opts.axes(inst.backend if inst is not None else None)
        self.couch: Couch | None = None
        self.build_db = db
        self.original = None if inst is None else {"home": inst.home, "image": inst.image, "cpus": inst.cpus,
                                                    "limits": inst.limits, "ini": getattr(inst, "ini", None)}

    # -- before any build
    def check_up_front(self, couch: Couch) -> None:
        restarting = [a.name for a in self.axes if a.how in (RESTART, CONTAINER)]
        if restarting and self.inst is None:
            raise UsageError(f"{', '.join(restarting)}: these axes restart CouchDB, so they need one started by "
                             "`dragnet couch up` or --backend")
        refilling = [a.name for a in self.axes if a.how == REFILL]
        if refilling and not self.data:
            raise UsageError(f"{', '.join(refilling)}: each value fills a database of its own: give --data")
        self.opts.up_front(self, couch)     # each kind's checks on the running node (installs, settings it refuses)
        for a in self.axes:
            if a.check_once is not None:
                a.check_once(self)

    def warn(self, text: str | None) -> None:
        if text is not None:
            self.on_event("warning", {"message": text})

    # -- per run
    def not_applicable(self, run_axes: dict) -> str | None:
        return self.opts.not_applicable(run_axes, self)

    def switch(self, run: dict, storage: str, couch: Couch) -> tuple[Couch, str]:
        """Make the node match run["axes"]; (the connection, the database to build on)."""
        ax = run.get("axes") or {}
        axes = [a for a in self.axes if a.name in ax]
        restarts = [a for a in axes if a.how in (RESTART, CONTAINER)]
        want = {a.name: ax[a.name] for a in restarts}
        if want and not self.current and all(a.running(want[a.name], self) for a in restarts):
            self.current = dict(want)      # the node the bench found or started already runs these
        if want and want != self.current:
            kw: dict = {}
            for a in restarts:
                merge_restart(kw, a.restart(want[a.name], self))
            self.on_event("restart", {"storage": storage, "axes": want})
            self.applied.forget()
            from dragnet.bench.managed import restart_on

            self.inst = restart_on(self.inst, storage, self.url, data_size=self.data_size(), env=self.env, **kw)
            self.current = dict(want)
            couch = connect(self.url, env=self.env)
            self.versions = None
            self.couch = couch
            for a in restarts:
                if a.check is not None:
                    self.checks[a.name] = a.check(want[a.name], self)
        if self.versions is None:
            self.versions = axis_couchdb.versions(couch)
        self.couch, self.build_db = couch, self.db
        for a in axes:
            if a.how in (REFILL, LIVE):
                a.apply(ax[a.name], self)
                if a.check is not None:
                    self.checks[a.name] = a.check(ax[a.name], self)
        return couch, self.build_db

    def beside(self, run: dict) -> Any:
        """What runs beside this run's build (an application load, dragnet.axes.load), or None."""
        ax = run.get("axes") or {}
        found = [a.beside(ax[a.name], self) for a in self.axes if a.beside is not None and a.name in ax]
        return next((b for b in found if b is not None), None)

    def around(self, run: dict, build: Callable[[], dict]) -> Callable[[], dict]:
        """The run's build inside what each of its axes puts around it (Axis.around), the first outermost."""
        ax = run.get("axes") or {}
        for a in reversed([a for a in self.axes if a.around is not None and a.name in ax]):
            build = (lambda a=a, inner=build: a.around(ax[a.name], self, inner))
        return build

    def verify(self, run: dict) -> dict:
        """After a build (its query servers still in the pool): the checks that need the build's processes
        (every CouchDB process on the run's cores); what they found, by the manifest key each axis names."""
        ax = run.get("axes") or {}
        out: dict = {}
        for a in self.axes:
            if a.check_after_build and a.name in ax:
                got = a.check(ax[a.name], self)
                if a.record_as:
                    out[a.record_as] = got
        return out

    def group(self) -> str | None:
        """The local CouchDB's cpuset cgroup (None: pinned by affinity, or a container)."""
        return getattr(self.inst, "cpuset_group", None) if self.inst.backend == "local" else None

    def root_pid(self) -> int | None:
        if self.inst.backend == "docker":
            from dragnet.couchdb.docker import container_root_pid

            return container_root_pid(self.inst.port, self.env)
        return self.inst.pid

    def restarted(self, inst: Any) -> None:
        """The bench restarted the node itself (storage, OOM): same CouchDB and cores, fresh settings."""
        self.inst = inst
        self.applied.forget()
        self.versions = None

    # -- afterwards
    def finish(self, couch_factory: Callable[[], Couch]) -> dict:
        """Put back every setting changed (the node may be gone: then nothing of ours is left on it)."""
        restored: list[str] = []
        if self.applied.original:
            try:
                restored = self.applied.restore(couch_factory())
            except Exception as exc:   # reported, never hiding the bench's own error
                return {"restored": restored, "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
        return {"restored": restored}

    def restore_instance(self, storage: str) -> Any:
        """The CouchDB the bench found goes back to its own release/image and cores."""
        if self.inst is None or not self.current:
            return self.inst
        o = self.original
        from dragnet.bench.managed import restart_on

        kw = {"cpus": o["cpus"], "limits": o["limits"]}
        kw.update({"image": o["image"]} if self.inst.backend == "docker" else {"home": o["home"]})
        kw["ini"] = o["ini"]
        self.on_event("restart", {"storage": storage})
        self.inst = restart_on(self.inst, storage, self.url, env=self.env, **kw)
        self.current = {}
        return self.inst
