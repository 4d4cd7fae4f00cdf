"""Per-view cost of a design document: each view built alone, next to the whole document's single pass.

CouchDB maps all views of a design doc in one pass per document, so the parts do not add up to the
whole: the sum of the parts minus the whole is what the shared pass saves (reading and sending each
document once). The figures come from the results documents of the builds; nothing is re-measured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from dragnet.results.record import Build


@dataclass(frozen=True)
class Part:
    view: str                      # "(whole)" for the whole design doc
    total_time_s: float | None     # indexer tasks' span, from the polls
    wall_time_s: float | None      # trigger to the view answering
    docs_per_sec: float | None
    share_of_whole: float | None   # wall time / the whole doc's wall time
    results_file: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


WHOLE = "(whole)"


def part(view: str, results: dict, whole_wall: float | None, results_file: str | None = None) -> Part:
    s = Build.of(results)
    wall = s.wall_s
    share = wall / whole_wall if wall is not None and whole_wall else None
    return Part(view=view, total_time_s=s.total_s, wall_time_s=wall,
                docs_per_sec=s.docs_per_s, share_of_whole=share, results_file=results_file)


def compare(whole: dict, parts: dict[str, dict], files: dict[str, str | None] | None = None) -> list[Part]:
    """Rows for the whole doc then each view (in the given order), shares relative to the whole's wall time."""
    files = files or {}
    whole_wall = Build.of(whole).wall_s
    rows = [part(WHOLE, whole, whole_wall, files.get(WHOLE))]
    rows += [part(v, r, whole_wall, files.get(v)) for v, r in parts.items()]
    return rows


def shared_pass_saving_s(rows: list[Part]) -> float | None:
    """Sum of the views' wall times minus the whole doc's; None when any is missing."""
    walls = [r.wall_time_s for r in rows]
    if len(rows) < 2 or any(w is None for w in walls):
        return None
    return sum(walls[1:]) - walls[0]


def run(design, build: Callable[[object, str], tuple[dict, str | None]]) -> tuple[list[Part], dict]:
    """Build the whole design doc, then each view alone (build(design_subset, label) -> (results, file)).

    Returns the rows and {label: results} so the caller can keep every results document.
    """
    from dragnet.index.design import select

    results, files = {}, {}
    results[WHOLE], files[WHOLE] = build(design, WHOLE)
    for name in design.view_names:
        results[name], files[name] = build(select(design, [name]), name)
    whole = results.pop(WHOLE)
    rows = compare(whole, results, files)
    results[WHOLE] = whole
    return rows, results
