"""The gate judges everything a revision changes: what changed (dragnet.index.revision), the figures besides
the metric and what each does (compare.Comparison.roles, runner.gate.roles), and the `_id`-only revision.

Pure: the builds are results dicts with the figures set, paired by round as a bench writes them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.index import revision
from dragnet.report import compare as c
from dragnet.runner import gate

REPO = Path(__file__).resolve().parent.parent
BASE = json.loads((REPO / "tests" / "ddocs" / "compare" / "base.json").read_text())
NOISE = (0.0, 0.01, -0.01, 0.005, -0.005, 0.0, 0.008, -0.008)   # a round's own wobble, the same on each side


def _build(rev: str, rnd: int, *, wall: float, cpu: float | None, ir: float) -> dict:
    s = {"ok": True, "docs": 1000, "wall_time_s": wall}
    if cpu is not None:
        s.update(cpu_s_per_1000_docs=cpu, qs_cpu_s_per_1000_docs=cpu / 2)
    return {"summary": s, "started_at": f"2026-11-28T10:{rnd:02d}:0{0 if rev == 'A' else 1}Z",
            "bench": {"id": "bench-1", "repeat": rnd, "axes": {"ddoc": rev, "language": "javascript"}},
            "instructions": {"ir_with_docs": 2 * 10**8 + int(ir), "ir_start": 2 * 10**8, "docs": 500}}


def _rounds(*, wall: float = 1.0, cpu: float | None = 1.0, ir: float = 1.0, cpu_noise: float = 0.0,
            rounds: int = 5) -> tuple[list[dict], list[dict]]:
    """Rounds of A and B; B's figures are A's times the given ratios (cpu_noise: B's CPU wobbles that much
    more from round to round)."""
    old, new = [], []
    for r in range(1, rounds + 1):
        w = NOISE[r % len(NOISE)]
        old.append(_build("A", r, wall=10 * (1 + w), cpu=2.0 * (1 + w), ir=1e8 * (1 + w / 100)))
        flip = cpu_noise * (1 if r % 2 else -1)
        new.append(_build("B", r, wall=10 * wall * (1 + w), cpu=None if cpu is None else 2.0 * cpu * (1 + w + flip),
                          ir=1e8 * ir * (1 + w / 100)))
    if cpu is None:
        for b in old:
            del b["summary"]["cpu_s_per_1000_docs"], b["summary"]["qs_cpu_s_per_1000_docs"]
    return old, new


def _gate(changes: revision.Changes = revision.Changes(maps=("by_name",)), **kw) -> c.Comparison:
    return c.compare(*_rounds(**kw), old_label="ddoc=A", new_label="ddoc=B", threshold=0.05, metric="instructions",
                     along="ddoc", roles=gate.roles(changes), changes=changes.text())


# ---- what a revision changes

def test_changes_name_the_maps_and_everything_outside_them():
    new = copy.deepcopy(BASE)
    new["views"]["by_name"]["map"] = new["views"]["by_name"]["map"].replace("doc", "d")
    assert revision.changes(BASE, new) == revision.Changes(maps=("by_name",))
    assert revision.changes(BASE, new).maps_only

    new["views"]["by_name"]["reduce"] = "function (k, v, re) { return v.length; }"
    new["views"]["by_group"]["reduce"] = "_count"
    new["views"]["by_total"] = {"map": "function (doc) { emit(doc.total, 1); }"}
    new["views"]["by_group"]["options"] = {"collation": "raw"}
    new["options"] = {"local_seq": True}
    new["language"] = "javascript"
    new["views"]["lib"] = {"util": "exports.x = 1;"}
    got = revision.changes(BASE, new)
    assert got.maps == ("by_name",) and not got.maps_only
    assert got.outside == ("reduce of by_group changed", "options of view by_group", "reduce of by_name added",
                           "views added: by_total", "views.lib", "options")
    assert "map of by_name" in got.text() and "views added: by_total" in got.text()
    assert revision.changes(new, BASE).outside[2] == "reduce of by_name removed"
    assert "views dropped: by_total" in revision.changes(new, BASE).outside
    py = dict(BASE, language="python")
    assert revision.changes(BASE, py).outside == ("language javascript → python",)


def test_only_id_and_rev_is_no_change():
    renamed = dict(copy.deepcopy(BASE), _id="_design/other", _rev="7-abc")
    got = revision.changes(BASE, renamed)
    assert got.none and got.maps_only and got.text().startswith("no change")
    assert not revision.changes(BASE, dict(renamed, shows={"x": "function () {}"})).none


def test_roles_judge_cpu_when_a_revision_changes_anything_outside_the_maps():
    assert gate.roles(revision.Changes(maps=("v",)))["cpu"] == c.FAILS
    assert gate.roles(revision.Changes(outside=("views added: w",)))["cpu"] == c.JUDGED
    assert {gate.roles(revision.Changes(maps=("v",)))[m] for m in ("wall", "qs", "instructions")} == {c.HOLDS}


# ---- the figures besides the metric

def test_a_regression_on_cpu_fails_though_the_instructions_tie():
    # the case: the instructions see nothing, CouchDB's CPU is +40%
    cmp = _gate(cpu=1.4, wall=1.4, ir=1.0)
    (cell,) = cmp.cells
    assert cell.metric == "instructions" and c.gate_of(cell, 0.05) is False     # the count alone would pass it
    assert cmp.failing_figures(cell) == ["cpu"] and cmp.exit_code == c.FAIL
    assert "CPU per document" in cmp.verdict()
    assert any(line.startswith("gate: ") and "fails on CPU per document +40.0%" in line for line in c.notes(cmp))
    # without the gate's roles (dragnet compare --metric instructions) the same builds pass
    plain = c.compare(*_rounds(cpu=1.4, wall=1.4), threshold=0.05, metric="instructions", along="ddoc")
    assert plain.exit_code == c.PASS


def test_a_change_outside_the_maps_passes_only_below_the_threshold_on_cpu():
    outside = revision.Changes(outside=("options",))
    noisy = _gate(cpu=1.0, cpu_noise=0.06, changes=outside)
    (cell,) = noisy.cells
    assert c.gate_of(cell, 0.05) is False and noisy.pending(cell) == ["cpu"]
    assert noisy.exit_code == c.UNDECIDED_EXIT and noisy.rounds_needed and noisy.rounds_needed > 5
    # the same noisy CPU on a change of the maps alone: CPU only fails, the instructions decide
    maps = _gate(cpu=1.0, cpu_noise=0.06)
    assert maps.exit_code == c.PASS and "on instructions per document" in maps.verdict()
    steady = _gate(cpu=1.01, changes=outside)
    assert steady.exit_code == c.PASS
    assert "CPU per document and instructions per document" in steady.verdict()
    # a regression outside the maps: CPU fails it
    assert _gate(cpu=1.3, changes=outside).exit_code == c.FAIL


def test_a_figure_wholly_above_the_threshold_holds_the_cell_and_says_which():
    cmp = _gate(wall=1.3, cpu=1.0, ir=1.0)
    (cell,) = cmp.cells
    assert not cmp.failing and cmp.held(cell) == ["wall"] and cmp.exit_code == c.UNDECIDED_EXIT
    assert "wall time +30.0%" in cmp.verdict() and "not passed" in cmp.verdict()
    assert cmp.rounds_needed is None
    assert any("held undecided: wall time +30.0%" in line for line in c.notes(cmp))
    js = cmp.to_json()
    assert js["gate"]["held_by"] == [["wall"]] and js["roles"]["wall"] == c.HOLDS and js["exit_code"] == 3
    assert cell.figures["wall"][0] == pytest.approx(1.3)


def test_without_cpu_recorded_wall_takes_its_role():
    cmp = _gate(wall=1.3, cpu=None, ir=1.0, changes=revision.Changes(outside=("views added: w",)))
    (cell,) = cmp.cells
    assert "cpu" not in cell.figures and cmp.failing_figures(cell) == ["wall"] and cmp.exit_code == c.FAIL


def test_an_id_only_revision_passes_without_a_build(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps(dict(BASE, _id="_design/other", _rev="3-abc")))
    r = CliRunner().invoke(main, ["bench", "--url", "http://127.0.0.1:9", "--db", "x", "--languages", "javascript",
                                  f"--ddoc=a={REPO / 'tests' / 'ddocs' / 'compare' / 'base.json'}", f"--ddoc=b={other}",
                                  "--gate", "5%", "--metric", "wall", "--results", str(tmp_path / "r"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["no_change"] and out["comparison"] is None and out["rounds"] == 0
    # nothing built: the folder holds the decision only, the same as printed
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["comment.md", "gate.json"]
    assert json.loads((tmp_path / "r" / "gate.json").read_text()) == out and out["folder"] == str(tmp_path / "r")
