"""Applies a bench's CouchDB axes (--couchdb, --cpus, --q, --config) before each planned run.

Everything is checked before any build (check_up_front): images and release directories, core counts,
config keys against each CouchDB's own default.ini, and each config value set once on the node and put back.
Per run, `switch` restarts once when a restart axis changed (couchdb, cpus), picks the q database, and sets
the config values (again after a restart: a restarted node starts from its own configuration). `finish`
puts back every setting it changed; the bench calls it in its finally block (Ctrl-C, SIGTERM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from dragnet.axes import config as axis_config
from dragnet.axes import couchdb as axis_couchdb
from dragnet.axes import cpus as axis_cpus
from dragnet.axes import q as axis_q
from dragnet.axes.model import CONTAINER, LIVE, REFILL, RESTART, Axis
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
        """In plan order: restarts outermost within a round, then databases, then live settings."""
        how = CONTAINER if backend == "docker" else RESTART
        out = []
        if self.couchdb:
            out.append(Axis("couchdb", self.couchdb, how=how, label=axis_couchdb.label))
        if self.cpus:
            out.append(Axis("cpus", self.cpus, how=how, label=lambda v: f"cpus{v}"))
        if self.q:
            out.append(Axis("q", self.q, how=REFILL, label=lambda v: f"q{v}"))
        for s in self.config:
            out.append(Axis(f"config:{s.name}", list(s.values), how=how if s.restart else LIVE, label=s.label))
        if self.ddoc:     # fastest after the language: revisions of a design doc alternate build by build
            out.append(Axis("ddoc", list(self.ddoc), label=lambda v: f"ddoc-{v}"))
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
        self.versions: dict | None = None
        self.checks: dict = {}
        self.original = None if inst is None else {"home": inst.home, "image": inst.image, "cpus": inst.cpus,
                                                    "limits": inst.limits, "ini": getattr(inst, "ini", None)}

    # -- before any build
    def check_up_front(self, couch: Couch) -> None:
        o, inst = self.opts, self.inst
        backend = inst.backend if inst is not None else None
        if (o.couchdb or o.cpus or self._restart_settings()) and inst is None:
            raise UsageError("--couchdb, --cpus and --config-restart restart CouchDB: they need one started by "
                             "`dragnet couch up` or --backend")
        if self._restart_settings() and backend != "local":
            raise UsageError("--config-restart: only the local backend writes its CouchDB's ini so far")
        if o.q and not self.data:
            raise UsageError("--q N,N fills one database per q: give --data")
        inis: dict[str, str] = {}
        if o.couchdb:
            inis = axis_couchdb.check_values(o.couchdb, backend, self.env)
        elif o.config:
            text = axis_config.default_ini_of(inst, env=self.env)
            if text is not None:
                inis = {couch.get("/").get("version", "this"): text}
        if o.config:
            if inis:
                known = {v: axis_config.known_keys(t) for v, t in inis.items()}
                if not o.couchdb:   # what the node has set counts too (local.ini, earlier PUTs)
                    for v in known:
                        known[v] |= axis_config.node_keys(couch)
                self.lacking = axis_config.check_known(o.config, known)
            axis_config.validate(couch, o.config)   # a value the node refuses: refused now

    # -- per run
    def not_applicable(self, run_axes: dict) -> str | None:
        cdb = run_axes.get("couchdb")
        for s in self.opts.config:
            if f"config:{s.name}" in run_axes and cdb is not None and cdb in self.lacking.get(s.name, []):
                return axis_config.not_applicable(s, axis_couchdb.label(cdb))
        return None

    def switch(self, run: dict, storage: str, couch: Couch) -> tuple[Couch, str]:
        """Make the node match run["axes"]; (the connection, the database to build on)."""
        ax = run.get("axes") or {}
        inst = self.inst
        restart_keys = ["couchdb", "cpus", *(f"config:{c.name}" for c in self._restart_settings())]
        want = {k: ax[k] for k in restart_keys if k in ax}
        if want and not self.current and want == self._running(want):
            self.current = dict(want)      # the node the bench found or started already runs these
        if want and want != self.current:
            kw: dict = {}
            if "couchdb" in want:
                kw.update(axis_couchdb.restart_settings(want["couchdb"], inst.backend))
            if "cpus" in want:
                kw.update(axis_cpus.restart_settings(want["cpus"], inst.backend, self.original["limits"]))
            ini = {c.name: want[f"config:{c.name}"] for c in self._restart_settings() if f"config:{c.name}" in want}
            if ini:
                kw["ini"] = ini
            self.on_event("restart", {"storage": storage, "axes": want})
            self.applied.forget()
            from dragnet.bench.run import restart_on

            self.inst = inst = restart_on(inst, storage, self.url, data_size=self.data_size(), env=self.env, **kw)
            self.current = dict(want)
            couch = connect(self.url, env=self.env)
            self.versions = None
            if "cpus" in want:
                self.checks["cpus"] = axis_cpus.check(want["cpus"], self._root_pid(), self._group())
            axis_config.check_restarted(couch, {c: want[f"config:{c.name}"] for c in self._restart_settings()
                                                if f"config:{c.name}" in want})
        if self.versions is None:
            self.versions = axis_couchdb.versions(couch)
        db = self.db
        if "q" in ax:
            from dragnet.bench.run import cluster_of, ensure_data

            db = axis_q.db_name(self.db, ax["q"])
            ensure_data(couch, db, self.data, q=int(ax["q"]), n=self.n,
                        progress=lambda m: self.on_event("import", {"message": m}))
            axis_q.check(ax["q"], cluster_of(couch, db))
        for s in self.opts.config:
            v = ax.get(f"config:{s.name}")
            if v is not None and not s.restart:
                self.applied.set(couch, s, v)
        return couch, db

    def _restart_settings(self) -> list:
        return [s for s in self.opts.config if s.restart]

    def _running(self, want: dict) -> dict:
        """The restart-axis values the managed node runs with now, for the axes in want."""
        inst, out = self.inst, {}
        if "couchdb" in want:
            if inst.backend == "docker":
                out["couchdb"] = inst.image
            elif inst.home and axis_couchdb.check_release(want["couchdb"]) == inst.home:
                out["couchdb"] = want["couchdb"]
        if "cpus" in want and inst.backend == "local" and inst.cpus:
            out["cpus"] = str(int(inst.cpus))
        for name, value in (getattr(inst, "ini", None) or {}).items():
            if f"config:{name}" in want:
                out[f"config:{name}"] = value
        return out

    def verify(self, run: dict) -> dict | None:
        """After a build (its query servers still in the pool): every CouchDB process on the run's cores."""
        cpus = (run.get("axes") or {}).get("cpus")
        return None if cpus is None else axis_cpus.check(cpus, self._root_pid(), self._group())

    def _group(self) -> str | None:
        """The local CouchDB's cpuset cgroup (None: pinned by affinity, or a container)."""
        return getattr(self.inst, "cpuset_group", None) if self.inst.backend == "local" else None

    def _root_pid(self) -> int | None:
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
        from dragnet.bench.run import restart_on

        kw = {"cpus": o["cpus"], "limits": o["limits"]}
        kw.update({"image": o["image"]} if self.inst.backend == "docker" else {"home": o["home"], "ini": o["ini"]})
        self.on_event("restart", {"storage": storage})
        self.inst = restart_on(self.inst, storage, self.url, env=self.env, **kw)
        self.current = {}
        return self.inst
