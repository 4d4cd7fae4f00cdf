"""Flame graphs of `--profile`'s folded stacks, drawn by inferno (crates.io, `make deps` installs it), for the
HTML report: one SVG per build kind (its builds' stacks summed), beside the page, and a table of the stages.

The folded files stay the raw figures: every SVG is redrawn from them (`inferno-flamegraph < file`).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Sequence

from dragnet.measure import profile as _profile
from dragnet.measure import stages as _stages
from dragnet.paths import CHECKOUT
from dragnet.report import profile_text as _pt
from dragnet.report.html_page import Section

TOOL = "inferno-flamegraph"


def find_inferno(env: dict | None = None) -> str | None:
    """inferno-flamegraph on PATH, in cargo's bin folder, or where `make deps` puts it (.tools/bin)."""
    env = os.environ if env is None else env
    found = shutil.which(TOOL, path=env.get("PATH"))
    if found:
        return found
    for d in (Path(env.get("CARGO_HOME") or Path.home() / ".cargo") / "bin", CHECKOUT / ".tools" / "bin"):
        p = d / TOOL
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def collapse_recursion(stacks: Counter) -> Counter:
    """Direct recursion (`lists:map_1/2` a hundred deep) as one frame, as inferno-collapse-recursive does, and
    the threads of one kind as one: the graph stays readable; the folded files keep every frame."""
    out: Counter = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        if len(frames) > 1:     # beam's schedulers of one kind side by side: 1_scheduler, 2_scheduler -> scheduler
            frames[1] = re.sub(r"^\d+_|_\d+$", "", frames[1])
        out[";".join(f for i, f in enumerate(frames) if i <= 1 or f != frames[i - 1])] += n
    return out


def draw(stacks: Counter, out: Path, title: str, tool: str) -> str | None:
    """The SVG of `stacks` (direct recursion collapsed) at `out`; None, or one line saying why it could not be
    drawn."""
    body = "".join(f"{s} {n}\n" for s, n in sorted(collapse_recursion(stacks).items()))
    try:
        proc = subprocess.run([tool, "--title", title, "--countname", "samples"], input=body.encode(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{TOOL} failed: {exc}"
    if proc.returncode != 0:
        last = proc.stderr.decode(errors="replace").strip().splitlines()
        return f"{TOOL} failed: {last[-1] if last else f'exit {proc.returncode}'}"
    out.write_bytes(proc.stdout)
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def html_sections(docs: Sequence[dict], outdir: str | Path, env: dict | None = None) -> list[Section]:
    """The profile section of the HTML page: stages per build kind and a flame graph of each."""
    kinds = _pt.by_kind(docs)
    if not kinds:
        return []
    out = Path(outdir)
    tool = find_inferno(env)
    notes: list[str] = []
    if tool is None:
        notes.append(f"{TOOL} not found (`make deps` installs it from crates.io): no flame graph; the stages "
                     f"below are from the folded files")
    rows, images = [], []
    for kind, rs in kinds.items():
        samples = sum((_pt.samples_by_stage(r) for r in rs), Counter())
        shares = _pt.shares_of(samples)
        rows.append([kind, len(rs), sum(samples.values()),
                     *[{"text": f"{shares[s]:.0%}" if s in shares else "", "sort": shares.get(s, 0)}
                       for s in _stages.STAGES]])
        stacks: Counter = Counter()
        missing = 0
        for r in rs:
            path = _pt.folded_path(r)
            try:
                stacks.update(_profile.read_folded(path)) if path else None
            except (OSError, ValueError, gzip.BadGzipFile):
                missing += 1
        if missing:
            notes.append(f"{kind}: {missing} folded file(s) not readable next to their results")
        if tool is not None and stacks:
            name = f"flame-{_slug(kind)}.svg"
            out.mkdir(parents=True, exist_ok=True)
            why = draw(stacks, out / name, f"{kind}: CouchDB's CPU during the build ({len(rs)} builds)", tool)
            if why:
                notes.append(f"{kind}: {why}")
            else:
                images.append((name, f"{kind}: flame graph of {sum(stacks.values()):,} samples"))
    absent = sorted({_pt.profile_of(r)["absent"] for rs in kinds.values() for r in rs
                     if _pt.profile_of(r).get("absent")})
    notes += absent
    notes.append("share of CouchDB's sampled CPU (perf, cpu-clock) by stage of the view build; stages as "
                 "dragnet.measure.stages names them; the flame graphs draw direct recursion as one frame")
    return [Section("profile: where CouchDB's CPU went", ("build kind", "builds", "samples",
                                                         *[_stages.LABELS[s] for s in _stages.STAGES]),
                    rows, notes=notes, id="profile", images=tuple(images))]
