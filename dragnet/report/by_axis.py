"""`report --by AXIS[,AXIS]`: compare builds along any bench axis (couchdb, config, cpus, q, storage, …).

Results are grouped by everything else (language and the other axes' values); within each such group, the
values of the --by axes are ranked by median docs/s and each adjacent pair is tested over the runs (Mann-Whitney
U and a bootstrap interval of the ratio of medians), as the engine ranking does. Pure: reads results dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dragnet.measure import stats as stats
from dragnet.errors import UsageError
from dragnet.results.record import Build

BUILTIN = ("language", "storage", "scenario", "size")


def result_axes(result: dict) -> dict:
    """bench.axes of a result, with the built-in axes filled from older fields when absent."""
    bench = result.get("bench") or {}
    axes = dict(bench.get("axes") or {})
    axes.setdefault("language", bench.get("language") or (result.get("view") or {}).get("language"))
    axes.setdefault("storage", bench.get("storage_label") or result.get("storage"))
    axes.setdefault("scenario", bench.get("scenario") or "")
    axes.setdefault("size", bench.get("size"))
    # "config": "a/b=1,c/d=2" -> "config:a/b": "1", "config:c/d": "2", so --by can take one setting
    for part in str(axes.pop("config", "") or "").split(","):
        name, eq, value = part.partition("=")
        if eq:
            axes[f"config:{name}"] = value
    return {k: v for k, v in axes.items() if v not in (None, "")}


def _chosen(name: str, by: list[str]) -> bool:
    """name is one of the --by axes (`config` stands for every setting)."""
    return name in by or ("config" in by and name.startswith("config:"))


def _dps(result: dict) -> float | None:
    b = Build.of(result)
    v = b.docs_per_s_recorded
    return v if b.status == "ok" and v is not None and v > 0 else None


@dataclass
class Cell:
    rest: str                 # the values of every other axis
    value: str                # the values of the --by axes
    samples: list[float] = field(default_factory=list)

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
        dps = _dps(r)
        if dps is None:
            continue
        value = " ".join(f"{k}={v}" for k, v in axes.items() if _chosen(k, by)) or "-"
        rest = " ".join(f"{k}={v}" for k, v in axes.items() if not _chosen(k, by))
        out.setdefault((rest, value), Cell(rest, value)).samples.append(dps)
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
        ranked = sorted(members, key=lambda c: -c.median)
        pairs = stats.compare_adjacent([(c.value, c.samples) for c in ranked])
        out.append({"group": rest,
                    "values": [{"value": c.value, "runs": len(c.samples), "median_docs_per_s": c.median,
                                "samples": c.samples} for c in ranked],
                    "pairs": [p.as_dict() for p in pairs]})
    return out


def lines(comparison: list[dict], by: list[str]) -> list[str]:
    out = [f"by {','.join(by)} (docs/s medians; adjacent pairs: two-sided Mann-Whitney U, alpha 0.05, ratio of "
           f"medians with a 95% bootstrap interval):"]
    for g in comparison:
        out.append(f"[{g['group']}]")
        for v in g["values"]:
            out.append(f"  {v['value']}: {v['median_docs_per_s']:.1f} docs/s median of {v['runs']}")
        for p in g["pairs"]:
            out.append("  " + stats.PairVerdict(**p).format())
    return out
