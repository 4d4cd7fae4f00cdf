"""The scenario axis of a bench (`--memory`, `--disk-profile`, `--cache`): the record the bench applies.

How one build runs inside a scenario is dragnet.axes.scenario (local cgroups) and
dragnet.axes.scenario_docker (the container's own limits); this record says when each is used.
"""

from __future__ import annotations

from typing import Callable

from dragnet.axes.model import Option, PlanAxis
from dragnet.axes.scenario import Scenario, prepare, run_in
from dragnet.errors import UsageError


# its command-line options (dragnet.cli.options.planned_options builds them), parsed by `parse`
OPTIONS = (
    Option(("--memory",), "memories", "",
           "Scenario axis: memory limits for CouchDB (beam and query servers, page cache included) in a cgroup, "
           "e.g. unlimited,512m (local backend: root; docker: the container's limit, recreated per scenario)."),
    Option(("--disk-profile",), "profiles", "",
           "Scenario axis: disk throttles on the device holding the data: unlimited, ssd-5000iops, san-600iops, "
           "hdd-150iops or r_iops:w_iops:r_bps:w_bps (local backend: root; docker: the container's device "
           "limits on the volume's disk)."),
    Option(("--cache",), "caches", "",
           "Scenario axis: cold (drop the page cache before each build) and/or warm (pre-read the database "
           "files)."),
)


def parse(memories: str | None, profiles: str | None, caches: str | None) -> list[Scenario]:
    """--memory, --disk-profile and --cache as scenarios (every combination); none given: no scenario."""
    if not (memories or profiles or caches):
        return []
    from dragnet.axes.model import parse_list
    from dragnet.axes.scenario import expand
    from dragnet.couchdb import limits

    return expand(limits.parse_memory_limits(memories or "unlimited"), limits.parse_profiles(profiles or "unlimited"),
                  parse_list(caches, "--cache"))


class ScenarioAxis(PlanAxis):
    """The scenarios as an axis of the plan (`--memory`, `--disk-profile`, `--cache`): interleaved in every
    round, each run built inside its scenario (run_in). Local: a cgroup plan around each build. Docker: the
    scenario's limits are the container's own, so the container is recreated whenever a run's scenario asks
    for other limits (and after an OOM kill, before the next run). Its key in every run and result is
    `scenario` (the results contract)."""

    name = "scenario"

    def __init__(self, scenarios: list[Scenario]):
        self.list = list(scenarios)
        self.by_label = {sc.label: sc for sc in self.list}
        self.docker = False      # each scenario's limits are the container's own
        self.stale = False       # docker: the container died in the last run; recreated before the next
        self.prepared: dict = {}
        self.engine = None
        self.target = None       # the current run's (docker); None: a LocalTarget per build
        self.recreated = False   # docker: a container of a scenario's limits replaced the one found

    def values(self, ctx) -> list[str]:
        return list(self.by_label) or [""]

    def check(self, ctx) -> None:
        inst, cfg = ctx.inst, ctx.config
        self.docker = bool(self.list) and inst is not None and inst.backend == "docker"
        if not self.docker:
            return
        from dragnet.couchdb import cluster as cluster

        if cluster.recorded(inst.port, ctx.env) is not None:
            raise UsageError("--memory/--disk-profile/--cache recreate the container per scenario; on a "
                             "cluster dragnet started that would take one node away: use a single node")
        if "tmpfs" in (cfg.storages or [inst.storage]) and not cfg.data:
            raise UsageError("--memory/--disk-profile/--cache with a docker CouchDB on tmpfs: each scenario "
                             "recreates the container, which loses the data on its tmpfs; give --data so the "
                             "bench imports it again")
        if ctx.axis_opts.restarts:
            raise UsageError("--memory/--disk-profile/--cache with --couchdb or --cpus on docker: not combinable "
                             "yet (each recreates the container)")

    def restart_keywords(self, ctx) -> dict:
        # docker: no limits to import under; each run's own are set before it
        return {"limits": None} if self.docker else {}

    def manifest(self, ctx) -> dict:
        return {"scenarios": [sc.to_json() for sc in self.list]}

    def restarted(self, ctx) -> None:
        self.stale = False

    def prepare(self, ctx) -> None:
        # refuse what cannot be enforced before any build
        if self.docker:
            from dragnet.axes import scenario_docker as sd
            from dragnet.couchdb.docker import client

            self.engine = client(ctx.env)
            self.prepared = {label: sd.prepare(sc, ctx.inst, env=ctx.env, c=self.engine)
                             for label, sc in self.by_label.items()}
            ctx.record("scenario_settings", {label: p.settings for label, p in self.prepared.items()})
        else:
            for sc in self.by_label.values():
                prepare(sc, ctx.couch, ctx.config.url)

    def before(self, run: dict, ctx) -> dict | None:
        self.target = None
        if not self.docker:
            return None
        from dragnet.axes import scenario_docker as sd
        from dragnet.couchdb.client import connect
        from dragnet.couchdb.docker import ContainerOOMKilled

        cfg, st = ctx.config, run["storage"]
        p = self.prepared[run["scenario"]]
        if self.stale or sd.container_limits(ctx.inst) != p.settings:
            ctx.on_event("restart", {"storage": st, "scenario": run["scenario"]})
            try:
                ctx.restart_on(st, limits=p.settings)
            except ContainerOOMKilled as exc:
                self.stale = True
                return sd.oom_at_start(p, exc)
            self.stale, self.recreated = False, True
            ctx.switcher.inst = ctx.inst     # the bench's end restores from the container that runs now
            ctx.couch = connect(cfg.url, env=ctx.env)
            if cfg.data and st == "tmpfs":      # the container's tmpfs went with it
                from dragnet.data.ensure import ensure_data

                ensure_data(ctx.couch, cfg.db, cfg.data, q=cfg.q, n=cfg.n,
                            progress=lambda m: ctx.on_event("import", {"message": m}))
        self.target = sd.DockerTarget(p, ctx.inst, env=ctx.env, c=self.engine)
        return None

    def build_keywords(self, run: dict) -> dict:
        # run_in records iostat on the data's device itself
        sc = self.by_label.get(run.get("scenario"))
        if sc is None:
            return {}
        if sc.memory:
            # the probe's sampling allocates inside beam, charged to the limited group: it could OOM-kill CouchDB
            return {"iostat": False, "beam": PAUSED}
        return {"iostat": False}

    def around(self, run: dict, ctx, couch, db: str, ddoc: str, build: Callable[[], dict]) -> dict | None:
        sc = self.by_label.get(run.get("scenario"))
        if sc is None:
            return None
        return run_in(sc, couch, ctx.config.url, db, ddoc, build, target=self.target)

    def on_oom(self, ctx) -> bool:
        if not self.docker:
            return False
        self.stale = True
        return True

    def changed(self, ctx, found) -> bool:
        return self.docker and (self.stale or self.recreated or ctx.inst.limits != found.limits)


PAUSED = "paused in a memory-limit scenario: its sampling inside beam would count against CouchDB's limit"


def plan_axis(config) -> ScenarioAxis:
    return ScenarioAxis(config.scenarios)
