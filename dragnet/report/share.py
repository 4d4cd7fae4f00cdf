"""How much of a view build an engine can change: each engine against the ceiling, and where build time goes.

Pure: everything here works on results dicts already recorded (wall times, pidstat samples), so its tests
need no server.

- The *ceiling* is a build on the null query server (dragnet.servers.registry.ceiling_language): it answers
  every map_doc with a fixed row and reads nothing, so its build time is CouchDB's side of the build alone.
- An engine's *share* of a build is 1 − ceiling time ÷ engine time: the part of its build a perfectly fast
  engine would remove. Its interval comes from the runs: the per-repeat ratios when ceiling and engine ran
  in the same repeats (paired, interleaved), else a bootstrap of the two medians.
- The *split* of one build divides its core-time (wall time × the machine's cores) into the query servers'
  CPU, beam's CPU and waiting (the rest: I/O, the pipe between beam and the query server, the run queue,
  idle cores); pidstat's %wait of the same processes (runnable, not running) is shown apart.
- *Switching from A to B* saves median(wall A) − median(wall B) seconds, 1 − wall B ÷ wall A of the build;
  no engine can save more than A's share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from dragnet.measure import stats as stats
from dragnet.measure.stats import median
from dragnet.report.tables import INFRA_FAMILIES, prepare
from dragnet.results.record import Build
from dragnet.results.load import BASELINE_LABEL
from dragnet.servers.registry import LANGUAGE, ceiling_language

CEILING = ceiling_language() or "ceiling"
COUCHJS = "javascript"
# views run inside beam: no process and no pipe, so the ceiling (an external server's best) does not bound them
IN_BEAM = ("erlang", "query")
# within this share of the ceiling an engine is as fast as any engine can be here
NEAR_CEILING = 0.05
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    point: float
    lo: float
    hi: float
    n: int
    paired: bool

    def format(self) -> str:
        runs = f"{self.n} paired runs" if self.paired else f"{self.n} runs"
        return f"{self.point:.0%} [{self.lo:.0%} … {self.hi:.0%}, {runs}]"


def _ratio_interval(num: Sequence[float], den: Sequence[float], pairs: Sequence[tuple[float, float]]) -> \
        tuple[float, float, float, int, bool]:
    """median(num)/median(den) with an interval: paired when every run has its partner, else bootstrapped."""
    if pairs and len(pairs) == len(num) == len(den) and len(pairs) >= 2:
        point, lo, hi = stats.paired_ratio_ci([a for a, _ in pairs], [b for _, b in pairs], level=LEVEL)
        return point, lo, hi, len(pairs), True
    point, lo, hi = stats.bootstrap_ratio_ci(list(num), list(den), level=LEVEL)
    return point, lo, hi, min(len(num), len(den)), False


def share(ceiling_walls: Sequence[float], engine_walls: Sequence[float],
          pairs: Sequence[tuple[float, float]] = ()) -> Interval | None:
    """The engine's share of its build, 1 − ceiling wall ÷ engine wall; pairs: (ceiling, engine) walls of
    the same repeat. None without a run of each."""
    if not ceiling_walls or not engine_walls:
        return None
    point, lo, hi, n, paired = _ratio_interval(ceiling_walls, engine_walls, pairs)
    return Interval(1 - point, 1 - hi, 1 - lo, n, paired)


@dataclass(frozen=True)
class Gain:
    """Switching from engine a to engine b."""

    a: str
    b: str
    a_wall_s: float
    b_wall_s: float
    saved_s: float
    share: Interval            # of a's build: 1 − wall b ÷ wall a
    cap: Interval | None       # a's share: what any engine could save at most
    verdict: str               # "gain", "loss", "noise", "near ceiling"

    def line(self) -> str:
        cap = "" if self.cap is None else (f"; no external engine can gain more than {self.cap.point:.0%} "
                                           f"[{self.cap.lo:.0%} … {self.cap.hi:.0%}] here")
        if self.cap is not None and self.share.lo > self.cap.hi:
            cap = (f"; more than {self.a}'s share ({self.cap.point:.0%}), which bounds any gain: too few or too "
                   f"noisy runs of the ceiling to tell (more --repeat)")
        head = (f"{self.a} → {self.b}: {self.a_wall_s:.1f} s → {self.b_wall_s:.1f} s, saving {self.saved_s:.1f} s, "
                f"{self.share.format()} of the build")
        if self.verdict == "near ceiling":
            return f"{head}: both within {NEAR_CEILING:.0%} of the ceiling{cap}"
        if self.verdict == "noise":
            return f"{head}: within the noise of these runs{cap}"
        return head + cap


def gain(a: str, a_walls: Sequence[float], b: str, b_walls: Sequence[float],
         pairs: Sequence[tuple[float, float]] = (), cap: Interval | None = None,
         b_share: Interval | None = None) -> Gain | None:
    """What switching from a to b saves; pairs: (a, b) walls of the same repeat; cap: a's share."""
    if not a_walls or not b_walls:
        return None
    point, lo, hi, n, paired = _ratio_interval(b_walls, a_walls, [(y, x) for x, y in pairs])
    sh = Interval(1 - point, 1 - hi, 1 - lo, n, paired)
    if cap is not None and b_share is not None and cap.hi < NEAR_CEILING and b_share.hi < NEAR_CEILING:
        verdict = "near ceiling"
    elif sh.lo <= 0 <= sh.hi:
        verdict = "noise"
    else:
        verdict = "gain" if sh.point > 0 else "loss"
    ma, mb = median(a_walls), median(b_walls)
    return Gain(a, b, ma, mb, ma - mb, sh, cap, verdict)


# ---------------------------------------------------------------- where a build's time goes

@dataclass(frozen=True)
class Split:
    """One build's core-time (wall × cores), in seconds: the query servers' CPU, beam's CPU, and the rest,
    when the build's processes were not on a core (I/O, the pipe, the run queue, idle cores). run_queue_s is
    the time they were runnable but not running (pidstat's %wait): part of the waiting, shown apart."""

    wall_s: float
    cores: int
    qs_cpu_s: float | None     # None: the view runs inside beam (Erlang, Mango)
    beam_cpu_s: float
    waiting_s: float
    run_queue_s: float

    @property
    def total_s(self) -> float:
        return self.wall_s * self.cores

    def fractions(self) -> dict[str, float]:
        t = self.total_s or 1.0
        return {"qs_cpu": (self.qs_cpu_s or 0.0) / t, "beam_cpu": self.beam_cpu_s / t, "waiting": self.waiting_s / t,
                "run_queue": self.run_queue_s / t}


SPLIT_PARTS = (("qs_cpu", "query server CPU"), ("beam_cpu", "beam CPU"),
               ("waiting", "waiting (I/O, pipe, run queue, idle)"))


def _interval_s(result: dict) -> float:
    argv = result.get("pidstat_command") or []
    try:
        return float(argv[-1])
    except (IndexError, TypeError, ValueError):
        return 1.0


def split_of(result: dict) -> Split | str:
    """The split of one build, or why there is none (no pidstat, no beam seen: a CouchDB elsewhere).

    pidstat's samples are weighed by how much of their interval lies between the build's trigger and the
    view's answer; a recorded build without those times counts every sample over the samples' own span."""
    build = Build.of(result)
    wall = build.wall_s
    if build.status != "ok" or not wall:
        return "the build did not finish"
    ps = result.get("pidstat") or {}
    fams = ps.get("summary") or {}
    if not ps.get("samples") or "beam" not in fams:
        why = ps.get("note") or "pidstat saw no beam process (a CouchDB on another machine?)"
        return f"no process figures: {why}"
    language = build.language
    lang = LANGUAGE.get(language)
    # a user-given server (--server) is no registry language: its family is whatever else pidstat saw
    qs_fams = lang.processes if lang else tuple(f for f in fams if f not in INFRA_FAMILIES)
    in_beam = language in IN_BEAM
    if not in_beam and not any(f in fams for f in qs_fams):
        return f"pidstat saw no {language} query-server process"
    dt = _interval_s(result)
    trigger = result.get("trigger") or {}
    t0, t1 = trigger.get("t_trigger"), trigger.get("t_return")
    if t0 is None or t1 is None:
        times = [s["t"] for s in ps["samples"] if s.get("t") is not None]
        t0, t1 = min(times) - dt, max(times)
        wall = t1 - t0
    beam_pids = set(fams["beam"].get("pids") or ())
    qs_pids = {p for f in qs_fams for p in (fams.get(f) or {}).get("pids") or ()}
    beam = qs = wait = 0.0
    for s in ps["samples"]:
        pid = s.get("pid")
        if (pid not in beam_pids and pid not in qs_pids) or s.get("t") is None:
            continue
        weight = max(0.0, min(s["t"], t1) - max(s["t"] - dt, t0)) / dt
        cpu = ((s.get("usr_pct") or 0.0) + (s.get("system_pct") or 0.0)) / 100.0 * dt * weight
        wait += (s.get("wait_pct") or 0.0) / 100.0 * dt * weight
        if pid in beam_pids:
            beam += cpu
        else:
            qs += cpu
    cores = int((result.get("machine") or {}).get("cpu_count") or 1)
    waiting = max(0.0, wall * cores - beam - qs)
    return Split(float(wall), cores, None if in_beam else qs, beam, waiting, wait)


def median_split(splits: Sequence[Split]) -> dict[str, float] | None:
    """Median of each part's fraction over builds (and the median wall)."""
    if not splits:
        return None
    out = {k: median([s.fractions()[k] for s in splits]) for k in ("qs_cpu", "beam_cpu", "waiting", "run_queue")}
    out["run_queue_s"] = median([s.run_queue_s for s in splits])
    out["wall_s"] = median([s.wall_s for s in splits])
    out["cores"] = splits[0].cores
    out["builds"] = len(splits)
    return out


def split_line(label: str, m: dict[str, float] | None, why: str | None = None) -> str:
    if m is None:
        return f"{label}: no split ({why or 'no process figures'})"
    parts = " · ".join(f"{name} {m[k]:.0%}" for k, name in SPLIT_PARTS)
    return (f"{label}: {parts} of {m['wall_s']:.1f} s × {m['cores']} cores (median of {m['builds']}); its "
            f"processes runnable but not running {m['run_queue_s']:.1f} s (summed over them)")


# ---------------------------------------------------------------- engines of one workload

@dataclass
class EngineShare:
    engine: str
    runs: int
    wall_s: float
    docs_per_s: float | None
    x_couchjs: float | None
    x_ceiling: float | None
    x_baseline: float | None
    share: Interval | None
    split: dict[str, float] | None
    split_why: str | None
    wall_min_s: float | None = None    # the spread of the runs
    wall_max_s: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Workload:
    """The engines built on one design doc (or views folder) and storage."""

    key: str
    storage: str
    engines: list[EngineShare]
    gains: list[Gain]
    notes: list[str]

    def as_dict(self) -> dict:
        return {"workload": self.key, "storage": self.storage, "engines": [e.as_dict() for e in self.engines],
                "gains": [asdict(g) | {"line": g.line()} for g in self.gains], "notes": self.notes}


def _workload_key(run: Build) -> str:
    if run.ddoc:
        return run.ddoc + ("" if not run.views else f" ({', '.join(run.views)})")
    return "view files"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _pairs(x: Sequence[Build], y: Sequence[Build]) -> list[tuple[float, float]]:
    """(x wall, y wall) of runs of the same bench and repeat."""
    ys = {(r.bench_id, r.repeat): r.wall_s for r in y if r.bench_id is not None}
    out = [(r.wall_s, ys[(r.bench_id, r.repeat)]) for r in x if (r.bench_id, r.repeat) in ys]
    return out if len(out) == len(x) == len(y) else []


def workloads(results: Iterable[dict]) -> list[Workload]:
    """Per workload and storage: every engine against couchjs, the ceiling and the Erlang baseline, its
    share with an interval, its split, and the gains of switching from couchjs (else the slowest)."""
    results = list(results)
    runs = prepare(results)
    splits: dict[int, Split | str] = {id(r): split_of(res) for r, res in zip(runs, results)}
    groups: dict[tuple[str, str], dict[str, list[Build]]] = {}
    for r in runs:
        if r.ok and r.wall_s:
            groups.setdefault((_workload_key(r), r.storage), {}).setdefault(r.label, []).append(r)
    out = []
    for (key, storage), by_label in groups.items():
        dps = {lab: median([r.docs_per_s for r in rs if r.docs_per_s]) if any(r.docs_per_s for r in rs) else None
               for lab, rs in by_label.items()}
        ceiling = by_label.get(CEILING, [])
        engines = []
        for lab, rs in sorted(by_label.items(), key=lambda kv: -(dps[kv[0]] or 0)):
            walls = [r.wall_s for r in rs]
            sh = None
            if ceiling and lab not in (CEILING, BASELINE_LABEL) and rs[0].language not in IN_BEAM:
                sh = share([c.wall_s for c in ceiling], walls, _pairs(ceiling, rs))
            good = [s for s in (splits[id(r)] for r in rs) if isinstance(s, Split)]
            whys = [s for s in (splits[id(r)] for r in rs) if isinstance(s, str)]
            engines.append(EngineShare(
                lab, len(rs), median(walls), dps[lab], _ratio(dps[lab], dps.get(COUCHJS)),
                _ratio(dps[lab], dps.get(CEILING)), _ratio(dps[lab], dps.get(BASELINE_LABEL)), sh,
                median_split(good), whys[0] if whys and not good else None, min(walls), max(walls)))
        notes = []
        if not ceiling:
            notes.append("no ceiling build here (bench --no-ceiling, or its CouchDB could not run it): "
                         "no shares")
        else:
            notes.append(f"{CEILING}: the null query server (reads no document, one fixed row each); only the "
                         "maps of a design doc are built on it")
        if ceiling and any(rs[0].language in IN_BEAM for lab, rs in by_label.items() if lab != BASELINE_LABEL):
            notes.append("Erlang views run inside beam, with no pipe and no process: the ceiling, the best of "
                         "an external query server, does not bound them (no share)")
        gains = []
        others = [e for e in engines if e.engine not in (CEILING, BASELINE_LABEL)]
        if len(others) >= 2:
            a = next((e for e in others if e.engine == COUCHJS), None) or min(others, key=lambda e: e.docs_per_s or 0)
            for e in others:
                if e is a:
                    continue
                in_beam = by_label[e.engine][0].language in IN_BEAM
                g = gain(a.engine, [r.wall_s for r in by_label[a.engine]], e.engine,
                         [r.wall_s for r in by_label[e.engine]], _pairs(by_label[a.engine], by_label[e.engine]),
                         cap=None if in_beam else a.share, b_share=e.share)
                if g is not None:
                    gains.append(g)
        out.append(Workload(key, storage, engines, gains, notes))
    return out


def _x(v: float | None) -> str:
    return "–" if v is None else f"×{v:.2f}"


def lines(loads: Sequence[Workload]) -> list[str]:
    """The console's account: engines against the ceiling, where time goes, what a switch gains."""
    out: list[str] = []
    for w in loads:
        out.append(f"engine share [{w.key}, {w.storage}] (× couchjs / × ceiling / × Erlang baseline by docs/s; "
                   f"share = 1 − ceiling time ÷ engine time, {LEVEL:.0%} interval over the runs):")
        for e in w.engines:
            share_text = "" if e.share is None else f"  share {e.share.format()}"
            spread = "" if e.runs < 2 else f" [{e.wall_min_s:.2f} … {e.wall_max_s:.2f}]"
            out.append(f"  {e.engine:<26} {e.runs} run(s)  {e.wall_s:8.2f} s{spread}  {_x(e.x_couchjs):>6} couchjs  "
                       f"{_x(e.x_ceiling):>6} ceiling  {_x(e.x_baseline):>6} baseline{share_text}")
        out.append("  where the time goes (share of wall × cores):")
        for e in w.engines:
            out.append("    " + split_line(e.engine, e.split, e.split_why))
        for g in w.gains:
            out.append("  " + g.line())
        out += [f"  note: {n}" for n in w.notes]
    return out


def to_json(loads: Sequence[Workload]) -> list[dict]:
    return [w.as_dict() for w in loads]


def shown(loads: Sequence[Workload]) -> list[Workload]:
    """The workloads worth an account: with a ceiling build, or two engines to switch between."""
    return [w for w in loads if w.gains or any(e.engine == CEILING for e in w.engines)]


# ---------------------------------------------------------------- at a forecast's size

def _duration(seconds: float) -> str:
    m = round(seconds / 60)
    return f"{seconds:.0f} s" if seconds < 120 else f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min"


def forecast_gains(out: dict) -> list[str]:
    """A forecast's (dragnet.forecast.run) build times at the target's size, as switches from couchjs (else the
    slowest engine) to each other engine: the saving with an interval spanning both predictions' intervals,
    and the ceiling's, which bounds every external engine's."""
    lines = []
    for label, per_lang in (out.get("forecasts") or {}).items():
        pred = {lang: ((f.get("quantities") or {}).get("build_time") or {}).get("prediction")
                for lang, f in per_lang.items()}
        pred = {lang: p for lang, p in pred.items() if p and p.get("value")}
        engines = [lang for lang in pred if lang not in (BASELINE_LABEL, CEILING)]
        if not engines or len(pred) < 2:
            continue
        a = COUCHJS if COUCHJS in engines else max(engines, key=lambda lang: pred[lang]["value"])
        pa = pred[a]
        head = f"{(label + ' ') if label else ''}a rebuild of {pa['docs']:,} documents: {_duration(pa['value'])} on {a}"
        for b in [x for x in pred if x != a]:
            pb = pred[b]
            saving = 1 - pb["value"] / pa["value"]
            # a forecast interval reaching down to 0 s leaves the saving unbounded below
            lo = 1 - pb["high"] / pa["low"] if pa["low"] > 0 else float("-inf")
            hi = 1 - pb["low"] / pa["high"]
            span = f"[{'unbounded' if lo == float('-inf') else format(lo, '.0%')} … {hi:.0%}]"
            what = (f"the ceiling {_duration(pb['value'])}: no external engine can save more than {saving:.0%} "
                    f"{span}") if b == CEILING else \
                (f"{_duration(pb['value'])} on {b}, saving {saving:.0%} {span}"
                 + (": within the intervals" if lo <= 0 <= hi else ""))
            lines.append(f"{head}, {what}")
    return lines
