"""How much of a view build an engine can change: each engine against the ceiling, and where build time goes.

Pure: everything here works on results dicts already recorded (wall times, kernel accounting), so its tests
need no server.

- The *ceiling* is a build on the null query server (dragnet.servers.registry.ceiling_language): it answers
  every map_doc with a fixed row and reads nothing, so its build time is CouchDB's side of the build alone.
- An engine's *share* of a build is 1 − ceiling time ÷ engine time: the part of its build a perfectly fast
  engine would remove. Its interval is decide's, as every verdict's: the t interval of the per-repeat log
  ratios when ceiling and engine ran in the same repeats (paired, interleaved), else Welch's; none from fewer
  than 3 runs.
- The *split* of one build divides its interval × the cores CouchDB could use into the query servers' CPU,
  beam's, CouchDB's helpers', every other program's and idle, from the kernel's accounting the results file
  records (dragnet.measure.cpu.core_time); the time CouchDB's threads waited for a core is shown apart.
- *Switching from A to B* saves median(wall A) − median(wall B) seconds, 1 − wall B ÷ wall A of the build;
  no engine can save more than A's share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from dragnet.measure import decide
from dragnet.measure.cpu import CoreTime, core_time
from dragnet.measure.decide import MIN_INTERVAL_N, TOO_FEW
from dragnet.measure.stats import median
from dragnet.report.columns import share_line
from dragnet.report.tables import prepare
from dragnet.results.record import Build
from dragnet.results.load import BASELINE_LABEL
from dragnet.results.schema import couchdb_versions
from dragnet.servers.registry import ceiling_language

CEILING = ceiling_language() or "ceiling"
COUCHJS = "javascript"
# views run inside beam: no process and no pipe, so the ceiling (an external server's best) does not bound them
IN_BEAM = ("erlang", "query")
# within this share of the ceiling an engine is as fast as any engine can be here
NEAR_CEILING = 0.05
LEVEL = 0.95      # one look at the runs a bench made (decide.LEVEL is for its repeated looks)


@dataclass(frozen=True)
class Interval:
    """A share with its interval; lo and hi are None below MIN_INTERVAL_N runs, which give no interval
    (decide.has_interval)."""

    point: float
    lo: float | None
    hi: float | None
    n: int
    paired: bool

    @property
    def has_interval(self) -> bool:
        return self.lo is not None and self.hi is not None

    def _runs(self) -> str:
        return f"{self.n}{' paired' * self.paired} run{'s' * (self.n != 1)}"

    def format(self) -> str:
        if not self.has_interval:
            return f"{self.point:.0%} [n={self.n}: no interval]"
        return f"{self.point:.0%} [{self.lo:.0%} … {self.hi:.0%}, {self._runs()}]"

    def bounds(self) -> str:
        return f"[{self.lo:.0%} … {self.hi:.0%}]" if self.has_interval else f"[n={self.n}: no interval]"


def _ratio_interval(num: Sequence[float], den: Sequence[float], pairs: Sequence[tuple[float, float]]) -> \
        tuple[float, float | None, float | None, int, bool]:
    """num ÷ den with decide's interval: paired when every run has its partner (the same round), else
    Welch's; no interval (None, None) from fewer than MIN_INTERVAL_N runs."""
    if pairs and len(pairs) == len(num) == len(den) and len(pairs) >= 2:
        iv = decide.paired_interval([a for a, _ in pairs], [b for _, b in pairs], level=LEVEL)
    else:
        iv = decide.unpaired_interval(list(num), list(den), level=LEVEL)
    if not decide.has_interval(iv):
        return iv.ratio, None, None, iv.n, iv.paired
    return iv.ratio, iv.low, iv.high, iv.n, iv.paired


def _one_minus(point: float, lo: float | None, hi: float | None, n: int, paired: bool) -> Interval:
    return Interval(1 - point, None if hi is None else 1 - hi, None if lo is None else 1 - lo, n, paired)


def share(ceiling_walls: Sequence[float], engine_walls: Sequence[float],
          pairs: Sequence[tuple[float, float]] = ()) -> Interval | None:
    """The engine's share of its build, 1 − ceiling wall ÷ engine wall; pairs: (ceiling, engine) walls of
    the same repeat. None without a run of each."""
    if not ceiling_walls or not engine_walls:
        return None
    return _one_minus(*_ratio_interval(ceiling_walls, engine_walls, pairs))


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
    verdict: str               # "gain", "loss", "noise", "near ceiling", "too few runs"

    def line(self) -> str:
        cap = "" if self.cap is None else (f"; no external engine can gain more than {self.cap.point:.0%} "
                                           f"{self.cap.bounds()} here")
        beyond = self.cap is not None and (self.share.lo > self.cap.hi if self.share.has_interval and
                                           self.cap.has_interval else self.share.point > self.cap.point)
        if beyond:
            cap = (f"; more than {self.a}'s share ({self.cap.point:.0%}), which bounds any gain: too few or too "
                   f"noisy runs of the ceiling to tell (more --repeat)")
        head = (f"{self.a} → {self.b}: {self.a_wall_s:.1f} s → {self.b_wall_s:.1f} s, saving {self.saved_s:.1f} s, "
                f"{self.share.format()} of the build")
        if self.verdict == "near ceiling":
            return f"{head}: both within {NEAR_CEILING:.0%} of the ceiling{cap}"
        if self.verdict == "noise":
            return f"{head}: within the noise of these runs{cap}"
        if self.verdict == TOO_FEW:
            return f"{head}: too few runs for a verdict (--repeat {MIN_INTERVAL_N} or more){cap}"
        return head + cap


def gain(a: str, a_walls: Sequence[float], b: str, b_walls: Sequence[float],
         pairs: Sequence[tuple[float, float]] = (), cap: Interval | None = None,
         b_share: Interval | None = None) -> Gain | None:
    """What switching from a to b saves; pairs: (a, b) walls of the same repeat; cap: a's share."""
    if not a_walls or not b_walls:
        return None
    sh = _one_minus(*_ratio_interval(b_walls, a_walls, [(y, x) for x, y in pairs]))
    if not sh.has_interval:
        verdict = TOO_FEW
    elif cap is not None and b_share is not None and cap.has_interval and b_share.has_interval and \
            cap.hi < NEAR_CEILING and b_share.hi < NEAR_CEILING:
        verdict = "near ceiling"
    elif not (sh.lo > decide.NOISE or sh.hi < -decide.NOISE):     # decide's rule: separated beyond the noise
        verdict = "noise"
    else:
        verdict = "gain" if sh.point > 0 else "loss"
    ma, mb = median(a_walls), median(b_walls)
    return Gain(a, b, ma, mb, ma - mb, sh, cap, verdict)


# ---------------------------------------------------------------- where a build's time goes

# the parts of dragnet.measure.cpu.CoreTime, in the order they are shown and stacked
SPLIT_PARTS = CoreTime.PARTS
NO_KERNEL = "no kernel accounting"


def split_of(result: dict) -> CoreTime | str:
    """The split of one build's interval × cores from the kernel's accounting its results file records
    (dragnet.measure.cpu.core_time), or why there is none. pidstat's samples are not used: at 1 s they miss
    most of a short build."""
    build = Build.of(result)
    if build.status != "ok" or not build.wall_s:
        return "the build did not finish"
    if "cpu" in result and result["cpu"] is None:     # recorded, but no CouchDB process was found here
        return "no process accounting: the CouchDB was not on this machine"
    cores = (result.get("machine") or {}).get("cpu_count")
    return core_time(result.get("cpu"), float(cores) if cores else None, in_beam=build.language in IN_BEAM)


def median_split(splits: Sequence[CoreTime]) -> dict | None:
    """Median of each part's fraction over builds, with the median seconds behind them."""
    if not splits:
        return None
    out: dict = {}
    for k, _ in SPLIT_PARTS + (("waited", ""),):
        fr = [s.fractions()[k] for s in splits if s.fractions()[k] is not None]
        out[k] = median(fr) if fr else None
    out["seconds"] = {k: (median(v) if (v := [s.seconds()[k] for s in splits if s.seconds()[k] is not None])
                          else None) for k, _ in SPLIT_PARTS}
    out["waited_s"] = median([s.waited_s for s in splits])
    out["interval_s"] = median([s.interval_s for s in splits])
    out["cores"] = splits[0].cores
    out["builds"] = len(splits)
    return out


def split_json(result: dict) -> dict:
    """One build's split for --json: the seconds and fractions of each part, or why there is none."""
    s = split_of(result)
    if isinstance(s, str):
        return {"why": s}
    return {"interval_s": s.interval_s, "cores": s.cores, "seconds": s.seconds(), "fractions": s.fractions(),
            "waited_s": s.waited_s}


def split_line(label: str, m: dict | None, why: str | None = None) -> str:
    """One engine's split on one line (the console's and Markdown's)."""
    if m is None:
        return f"{label}: no split ({why or NO_KERNEL})"
    parts = " · ".join(f"{name} {m[k]:.0%}" for k, name in SPLIT_PARTS if m[k] is not None)
    if m["other"] is None:
        parts = parts.replace("idle", "other programs and idle")
    cores = f"{m['cores']:g}"
    return (f"{label}: {parts} of {m['interval_s']:.2f} s × {cores} cores (median of {m['builds']}); "
            f"CouchDB's threads waited for a core {m['waited_s']:.2f} s")


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
    couchdb: str | None = None         # the CouchDB version(s) its builds ran on

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
    splits: dict[int, CoreTime | str] = {id(r): split_of(res) for r, res in zip(runs, results)}
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
            good = [s for s in (splits[id(r)] for r in rs) if isinstance(s, CoreTime)]
            whys = [s for s in (splits[id(r)] for r in rs) if isinstance(s, str)]
            engines.append(EngineShare(
                lab, len(rs), median(walls), dps[lab], _ratio(dps[lab], dps.get(COUCHJS)),
                _ratio(dps[lab], dps.get(CEILING)), _ratio(dps[lab], dps.get(BASELINE_LABEL)), sh,
                median_split(good), whys[0] if whys and not good else None, min(walls), max(walls),
                ", ".join(sorted({v for v in (couchdb_versions(r.data).get("couchdb") for r in rs) if v})) or None))
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


def lines(loads: Sequence[Workload]) -> list[str]:
    """The console's account: engines against the ceiling, where time goes, what a switch gains."""
    out: list[str] = []
    for w in loads:
        out.append(f"engine share [{w.key}, {w.storage}] (× couchjs / × ceiling / × Erlang baseline by docs/s; "
                   f"share = 1 − ceiling time ÷ engine time, {LEVEL:.0%} interval over the runs):")
        out += [share_line(e) for e in w.engines]     # its pieces are report.columns.SHARE's
        out += split_lines(w)
        for g in w.gains:
            out.append("  " + g.line())
        out += [f"  note: {n}" for n in w.notes]
    return out


def split_lines(w: Workload) -> list[str]:
    """Where each engine's build time went (the kernel's split), one line per engine; older results files
    without kernel accounting say so once."""
    out = ["  where the time goes (share of the build's interval × the cores CouchDB could use):"]
    old = [e.engine for e in w.engines if e.split is None and (e.split_why or "").startswith(NO_KERNEL)]
    for e in w.engines:
        if e.engine not in old:
            out.append("    " + split_line(e.engine, e.split, e.split_why))
    if old:
        out.append(f"    {', '.join(old)}: {NO_KERNEL} in these results files (recorded before dragnet kept it)")
    return out


def to_json(loads: Sequence[Workload]) -> list[dict]:
    return [w.as_dict() for w in loads]


def shown(loads: Sequence[Workload]) -> list[Workload]:
    """The workloads worth an account: with a ceiling build, two engines to switch between, or a split of
    where a build's time went."""
    return [w for w in loads if w.gains or any(e.engine == CEILING or e.split for e in w.engines)]


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
