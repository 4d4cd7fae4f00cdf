"""`--profile` in words and JSON: each build kind's stage shares, perf's own cost, missing parts and levers.

Reads the results' `profile` entry (dragnet.index.build_profile); a build kind is the language a result is
reported under plus its CouchDB version, and its shares are summed over its builds' samples (rounds of a
bench weigh by how long they ran). Pure: the folded files are only named here, never read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable

from dragnet.measure import stages as _stages
from dragnet.report import levers as _levers
from dragnet.results.record import result_label

# A profile names levers only where its samples are enough to speak for the build: at least this many, and
# covering at least this share of the CPU the kernel counted for CouchDB's tree over the build (perf loses
# samples on a loaded machine, and a short build gives few).
MIN_SAMPLES = 200
MIN_COVERAGE = 0.5


def profile_of(result: dict) -> dict | None:
    p = result.get("profile")
    return p if isinstance(p, dict) else None


def folded_path(result: dict) -> str | None:
    """The folded file beside the results file it belongs to (absolute where the results file is known)."""
    p = profile_of(result) or {}
    if not p.get("folded"):
        return None
    src = result.get("_source") or result.get("results_file")
    return str(Path(src).parent / p["folded"]) if src else p["folded"]


def kind_of(result: dict) -> str:
    version = (result.get("couchdb") or {}).get("version")
    return f"{result_label(result)}" + (f" on {version}" if version else "")


def samples_by_stage(result: dict) -> Counter:
    p = profile_of(result) or {}
    return Counter({s: int(v.get("samples") or 0) for s, v in (p.get("stages") or {}).items()})


def shares_of(samples: Counter) -> dict[str, float]:
    total = sum(samples.values())
    return {s: n / total for s, n in samples.items()} if total else {}


def shares_text(shares: dict[str, float], limit: int = 6) -> str:
    top = sorted(shares.items(), key=lambda kv: -kv[1])[:limit]
    return " · ".join(f"{_stages.LABELS.get(s, s)} {v:.0%}" for s, v in top)


def thin(results: Iterable[dict]) -> str | None:
    """Why these builds' profiles are too thin to name levers from, or None. Pure."""
    rs = [r for r in results if profile_of(r) is not None and not profile_of(r).get("absent")]
    n = sum(int(profile_of(r).get("samples") or 0) for r in rs)
    if n < MIN_SAMPLES:
        return f"only {n:,} samples (fewer than {MIN_SAMPLES})"
    sampled = sum(float(profile_of(r).get("sampled_cpu_s") or 0) for r in rs)
    cpu = sum(float((r.get("cpu") or {}).get("cpu_s") or 0) for r in rs)
    if cpu and sampled / cpu < MIN_COVERAGE:
        return (f"the samples cover {sampled / cpu:.0%} of the {cpu:.2f} CPU-s the kernel counted for CouchDB "
                f"(under {MIN_COVERAGE:.0%})")
    return None


def build_lines(result: dict) -> list[str]:
    """One build's profile: its stages, perf's cost, what is missing, the levers."""
    p = profile_of(result)
    if p is None:
        return []
    if p.get("absent"):
        return [f"profile: {p['absent']}"]
    samples = samples_by_stage(result)
    out = [f"profile: {shares_text(shares_of(samples))} (of {p.get('samples', 0):,} samples, "
           f"{p.get('sampled_cpu_s', 0):.2f} CPU-s)"]
    out.append("profile: " + cost_text(result))
    out += [f"profile: {n}" for n in p.get("notes") or ()]
    path = folded_path(result)
    if path:
        out.append(f"profile: folded stacks in {path}")
    why = thin([result])
    if why:
        out.append(f"profile: no levers named: {why}")
    else:
        out += lever_lines(shares_of(samples), result)
    return out


def cost_text(result: dict) -> str:
    p = profile_of(result) or {}
    cpu = (result.get("cpu") or {}).get("cpu_s")
    perf = p.get("perf_cpu_s")
    if perf is None:
        return "perf's own CPU not known"
    rel = f", {perf / cpu:.1%} of CouchDB's {cpu:.2f} s" if cpu else ""
    named = p.get("erlang_named_share")
    names = f"; {named:.0%} of beam's samples name an Erlang function" if named is not None else ""
    return f"perf's own CPU {perf:.2f} s{rel}{names}"


def lever_lines(shares: dict[str, float], result: dict) -> list[str]:
    view = result.get("view") or {}
    db = (result.get("db") or {}).get("name") or "<db>"
    version = (result.get("couchdb") or {}).get("version")
    out = []
    for s in _levers.suggest(shares, version=version, db=db, language=str(view.get("language") or "<language>")):
        out.append(f"lever ({_stages.LABELS.get(s.stage, s.stage)} {s.share:.0%}): {s.lever.name}: {s.lever.why}")
        if s.command:
            out.append(f"  {s.command}")
    return out


def by_kind(results: Iterable[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        if profile_of(r) is not None:
            out[kind_of(r)].append(r)
    return dict(out)


def bench_lines(results: Iterable[dict]) -> list[str]:
    """One line per build kind with its stage shares and perf's cost, its levers' commands under it, then
    what each lever is, once."""
    kinds = by_kind(results)
    if not kinds:
        return []
    out = ["profile (share of CouchDB's sampled CPU, by stage):"]
    whys: dict[str, str] = {}
    for kind, rs in kinds.items():
        absent = [profile_of(r)["absent"] for r in rs if profile_of(r).get("absent")]
        samples = sum((samples_by_stage(r) for r in rs), Counter())
        if not samples:
            out.append(f"  {kind}: {absent[0] if absent else 'no samples'}")
            continue
        perf = sum(profile_of(r).get("perf_cpu_s") or 0 for r in rs)
        cpu = sum((r.get("cpu") or {}).get("cpu_s") or 0 for r in rs)
        cost = f"; perf's own CPU {perf / cpu:.1%} of CouchDB's" if cpu else ""
        out.append(f"  {kind}: {shares_text(shares_of(samples))} ({len(rs)} builds{cost})")
        why = thin(rs)
        if why:
            out.append(f"    no levers named: {why}")
            continue
        r0 = rs[0]
        for sug in _levers.suggest(shares_of(samples), version=(r0.get("couchdb") or {}).get("version"),
                                   db=(r0.get("db") or {}).get("name") or "<db>",
                                   language=str((r0.get("view") or {}).get("language") or "<language>")):
            whys.setdefault(sug.lever.name, sug.lever.why)
            out.append(f"    lever for {_stages.LABELS.get(sug.stage, sug.stage)} ({sug.share:.0%}): {sug.lever.name}"
                       + (f": {sug.command}" if sug.command else ""))
    notes = sorted({n for rs in kinds.values() for r in rs for n in profile_of(r).get("notes") or ()})
    out += [f"  note: {n}" for n in notes]
    return out + [f"  {name}: {why}" for name, why in whys.items()]


def sweep_results(folder: Path) -> list[dict]:
    """A forecast's sweep builds (its `sweep` folder) with a profile; [] without."""
    from dragnet.results.load import load_results

    sweep = Path(folder) / "sweep"
    if not sweep.is_dir() or not any(sweep.rglob("*.folded.gz")):
        return []
    return [r for r in load_results([sweep]) if profile_of(r) is not None]


def as_json(result: dict) -> dict | None:
    """`--json`'s profile: the stages, perf's cost, the folded file's path, the levers."""
    p = profile_of(result)
    if p is None:
        return None
    if p.get("absent"):
        return {"absent": p["absent"]}
    samples = samples_by_stage(result)
    view = result.get("view") or {}
    why = thin([result])
    return {**{k: v for k, v in p.items() if k != "folded"}, "folded": folded_path(result), "thin": why,
            "levers": [] if why else [{"stage": s.stage, "share": round(s.share, 4), "lever": s.lever.name, "why": s.lever.why,
                        "command": s.command}
                       for s in _levers.suggest(shares_of(samples),
                                                version=(result.get("couchdb") or {}).get("version"),
                                                db=(result.get("db") or {}).get("name") or "<db>",
                                                language=str(view.get("language") or "<language>"))]}


def bench_json(results: Iterable[dict]) -> dict:
    """Per build kind: the summed stage samples and shares, and each build's folded file."""
    out = {}
    for kind, rs in by_kind(results).items():
        samples = sum((samples_by_stage(r) for r in rs), Counter())
        out[kind] = {"stages": {s: {"samples": n, "share": round(v, 4)}
                                for (s, n), v in zip(samples.items(), shares_of(samples).values())},
                     "folded": [folded_path(r) for r in rs if folded_path(r)], "thin": thin(rs),
                     "absent": sorted({profile_of(r)["absent"] for r in rs if profile_of(r).get("absent")})}
    return out
