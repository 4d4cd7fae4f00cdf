"""`report --by AXIS[,AXIS]`: compare builds along any bench axis (couchdb, config, cpus, q, storage, …).

Results are grouped by everything else (language and the other axes' values); within each such group, the
values of the --by axes are ranked by cost per 1,000 docs and each adjacent pair is judged separated, tied or
unresolved (dragnet.report.ranking: paired by bench round), as the engine ranking does. Pure: reads results dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from dragnet.axes import config as axis_config
from dragnet.measure import stats as stats
from dragnet.errors import UsageError
from dragnet.results.load import is_nouveau, nouveau_axes
from dragnet.results.record import Build
from dragnet.report import ranking as ranking_model
from dragnet.report.compare import cpu_per_1000, round_key

BUILTIN = ("language", "storage", "scenario", "size")


def result_axes(result: dict) -> dict:
    """bench.axes of a result, with the built-in axes filled from older fields when absent; a Nouveau build's
    own axes (results.load.nouveau_axes), its settings one axis each as for views."""
    if is_nouveau(result):
        axes = dict(nouveau_axes(result))
        for part in str(axes.pop("config", "") or "").split(" "):
            name, eq, value = part.partition("=")
            if eq:
                axes[f"config:{name}"] = value
        return axes
    bench = result.get("bench") or {}
    axes = dict(bench.get("axes") or {})
    axes.setdefault("language", bench.get("language") or (result.get("view") or {}).get("language"))
    axes.setdefault("storage", bench.get("storage_label") or result.get("storage"))
    axes.setdefault("scenario", bench.get("scenario") or "")
    axes.setdefault("size", bench.get("size"))
    # "config": "a/b=1,c/d=2" -> "config:a/b": "1", "config:c/d": "2", so --by can take one setting
    for name, value in axis_config.settings_of(axes.pop("config", "")).items():
        axes[f"config:{name}"] = value
    return {k: v for k, v in axes.items() if v not in (None, "")}


def _chosen(name: str, by: list[str]) -> bool:
    """name is one of the --by axes (`config` stands for every setting)."""
    return name in by or ("config" in by and name.startswith("config:"))


def _build(result: dict):
    """The build of a result (views or Nouveau alike) when it succeeded with a docs/s, else None."""
    b = Build.of(result)
    return b if b.status == "ok" and b.docs_per_s is not None and b.docs_per_s > 0 else None


@dataclass
class Cell:
    rest: str                 # the values of every other axis
    value: str                # the values of the --by axes
    samples: list[float] = field(default_factory=list)
    builds: list[Build] = field(default_factory=list)

    @property
    def median(self) -> float:
        return stats.median(self.samples)


def parse_by(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UsageError("--by: give one or more axes, e.g. couchdb,config")
    return names


def cells(results: list[dict], by: list[str]) -> list[Cell]:
    """One cell per (other axes' values, --by values) with its runs' docs/s; an axis no result has is
    refused."""
    seen = set()
    out: dict[tuple[str, str], Cell] = {}
    for r in results:
        axes = result_axes(r)
        seen |= set(axes)
        b = _build(r)
        if b is None:
            continue
        dps = b.docs_per_s
        value = " ".join(f"{k}={v}" for k, v in axes.items() if _chosen(k, by)) or "-"
        rest = " ".join(f"{k}={v}" for k, v in axes.items() if not _chosen(k, by))
        cell = out.setdefault((rest, value), Cell(rest, value))
        cell.samples.append(dps)
        key = round_key(r)   # a bench round as the results record it (Nouveau: its folder and round)
        cell.builds.append(replace(b, bench_id=key[0] if key else None, repeat=key[1] if key else None,
                                   cpu_s_per_1000=cpu_per_1000(r)))
    missing = [b for b in by if not any(_chosen(k, [b]) for k in seen)]
    if missing:
        raise UsageError(f"--by {','.join(missing)}: no result varies or records that axis "
                         f"(these do: {', '.join(sorted(seen))})")
    return list(out.values())


def compare(results: list[dict], by: list[str]) -> list[dict]:
    """Per group of the other axes: the --by values fastest first, and each adjacent pair's verdict."""
    groups: dict[str, list[Cell]] = {}
    for c in cells(results, by):
        groups.setdefault(c.rest, []).append(c)
    out = []
    for rest, members in groups.items():
        r = ranking_model.rank(rest, [(c.value, c.builds) for c in members])
        by_name = {c.value: c for c in members}
        ranked = [by_name[n] for n in r.names] + [c for c in members if c.value not in r.names]
        out.append({"group": rest,
                    "values": [{"value": c.value, "runs": len(c.samples), "median_docs_per_s": c.median,
                                "samples": c.samples, "builds": [b.ranked() for b in c.builds]} for c in ranked],
                    **r.as_dict()})
    return out


def lines(comparison: list[dict], by: list[str]) -> list[str]:
    out = [f"by {','.join(by)} (docs/s medians; order and adjacent pairs: {ranking_model.TEST}; > separated, "
           f"≈ tied, ? unresolved):"]
    for g in comparison:
        out.append(f"[{g['group']}]")
        for v in g["values"]:
            out.append(f"  {v['value']}: {v['median_docs_per_s']:.1f} docs/s median of {v['runs']}")
        if g["pairs"]:
            out += ranking_model.Ranking.from_dict(dict(g, where="")).lines()
    return out
