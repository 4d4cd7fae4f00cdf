"""Applies a bench's CouchDB axes (--couchdb, --cpus, --q, --config, --config-restart) before each planned run.

Everything is checked before any build (check_up_front): images and release directories, core counts,
config keys against what each CouchDB's code reads (its version's catalogue) and its own default.ini, and
each live config value set once on the node and put back. Per run, `switch` asks each axis (dragnet.axes.model.Axis, built by its own module) what to do:
one restart when any restart axis changed (their settings merged), then the refill and live axes applied,
and each axis's check. `finish` puts back every live setting changed and `restore_instance` restarts onto
the CouchDB the bench found; the bench calls both in its finally block (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from dragnet.axes import config as axis_config
from dragnet.axes import couchdb as axis_couchdb
from dragnet.axes import cpus as axis_cpus
from dragnet.axes import ddoc as axis_ddoc
from dragnet.axes import q as axis_q
from dragnet.axes.model import CONTAINER, LIVE, REFILL, RESTART, Axis, merge_restart
from dragnet.couchdb.client import Couch, connect
from dragnet.errors import UsageError


@dataclass
class AxisOptions:
    """The values the CLI parsed; empty lists: the axis is not varied."""

    couchdb: list[str] = field(default_factory=list)
    cpus: list[str] = field(default_factory=list)
    q: list[str] = field(default_factory=list)
    config: list[axis_config.Setting] = field(default_factory=list)
    ddoc: dict[str, Any] = field(default_factory=dict)   # revision label -> dragnet.build.design.Design

    @property
    def any(self) -> bool:
        return bool(self.couchdb or self.cpus or self.q or self.config or self.ddoc)

    def axes(self, backend: str | None) -> list[Axis]:
        """In plan order: restarts outermost within a round, then databases, then live settings; each axis
        from its own module (adding an axis: its module's axis() here, docs/axes.md)."""
        out = []
        if self.couchdb:
            out.append(axis_couchdb.axis(self.couchdb, backend))
        if self.cpus:
            out.append(axis_cpus.axis(self.cpus, backend))
        out += [axis_config.axis(s, backend) for s in self.config if s.restart]
        if self.q:
            out.append(axis_q.axis(self.q))
        out += [axis_config.axis(s, backend) for s in self.config if not s.restart]
        if self.ddoc:     # fastest after the language: revisions of a design doc alternate build by build
            out.append(axis_ddoc.axis(list(self.ddoc)))
        return out


def config_value_label(axes: dict) -> str:
    """'view_updater/gc_interval_docs=1000' from a run's axes (the contract's `config` axis)."""
    return ",".join(f"{k[len('config:'):]}={v}" for k, v in axes.items() if k.startswith("config:"))


def contract_axes(run_axes: dict) -> dict:
    """A run's extra axes as bench.axes records them: config settings joined under "config"."""
    out = {k: v for k, v in run_axes.items() if not k.startswith("config:")}
    cfg = config_value_label(run_axes)
    if cfg:
        out["config"] = cfg
    return out


class AxisSwitcher:
    def __init__(self, opts: AxisOptions, *, url: str, db: str, env: Any, inst: Any, data: str | None,
                 n: int | None, data_size: Callable[[], int], on_event: Callable[[str, dict], None]):
        self.opts, self.url, self.db, self.env, self.inst = opts, url, db, env, inst
        self.data, self.n, self.data_size, self.on_event = data, n, data_size, on_event
        self.applied = axis_config.Applied()
        self.current: dict[str, str] = {}        # restart-axis values the node runs with now
        self.lacking: dict[str, list[str]] = {}  # config name -> CouchDB values without that setting
        self.ini_label: dict[str, str] = {}      # couchdb value -> version label for messages
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
        o, inst = self.opts, self.inst
        backend = inst.backend if inst is not None else None
        if (o.couchdb or o.cpus or self._restart_settings()) and inst is None:
            raise UsageError("--couchdb, --cpus and --config-restart restart CouchDB: they need one started by "
                             "`dragnet couch up` or --backend")
        if o.q and not self.data:
            raise UsageError("--q N,N fills one database per q: give --data")
        known: dict[str, set] = {}
        if o.couchdb:
            for v, text in axis_couchdb.check_values(o.couchdb, backend, self.env).items():
                version = axis_couchdb.version_of(v, backend, self.env) if o.config else None
                known[v], self.key_sources[v] = axis_config.keys_of(version, text)
                self._warn_partial(version, self.key_sources[v])
        elif o.config:
            version = couch.get("/").get("version")
            keys, source = axis_config.keys_of(version, axis_config.default_ini_of(inst, env=self.env))
            self._warn_partial(version, source)
            if source:        # what the node has set counts too (local.ini, earlier PUTs)
                known[version or "this"] = keys | axis_config.node_keys(couch)
                self.key_sources[version or "this"] = source
        if o.config:
            if known:
                self.lacking = axis_config.check_known(o.config, known)
            axis_config.validate(couch, o.config)   # a value the node refuses: refused now

    def _warn_partial(self, version: str | None, source: str) -> None:
        text = axis_config.partial_warning(version, source)
        if text is not None:
            self.on_event("warning", {"message": text})

    # -- per run
    def not_applicable(self, run_axes: dict) -> str | None:
        cdb = run_axes.get("couchdb")
        for s in self.opts.config:
            if f"config:{s.name}" in run_axes and cdb is not None and cdb in self.lacking.get(s.name, []):
                return axis_config.not_applicable(s, axis_couchdb.label(cdb),
                                                  catalogued=self.key_sources.get(cdb) == "catalogue")
        return None

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

    def _restart_settings(self) -> list:
        return [s for s in self.opts.config if s.restart]

    def verify(self, run: dict) -> dict | None:
        """After a build (its query servers still in the pool): the checks that need the build's processes
        (every CouchDB process on the run's cores); what the cpus axis checked, for the manifest."""
        ax = run.get("axes") or {}
        out = None
        for a in self.axes:
            if a.check_after_build and a.name in ax:
                got = a.check(ax[a.name], self)
                out = got if a.name == "cpus" else out
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
