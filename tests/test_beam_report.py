"""beam's activity in the outputs (dragnet.report.beam_activity): per engine and version, one console line,
JSON, the HTML section's stacked bar, a build's own lines; from a recorded 3.5.0 probe output. No server."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from dragnet.measure import beam
from dragnet.report import beam_activity

RECORDED = Path(__file__).parent / "fixtures" / "beam" / "local-couchjs-20k.txt"


@pytest.fixture(scope="module")
def record() -> dict:
    return {"schema": beam.SCHEMA, "period_ms": 100, "absent": None, "nodes": beam.parse(RECORDED.read_text()),
            "probe": {"backend": "local", "argv": ["erl"], "cpu_s": 0.37, "cpu_during_build_s": 0.02}}


def _result(label: str, rec: dict | None, version: str = "3.5.0", storage: str = "disk") -> dict:
    return {"summary": {"language": label, "ok": True}, "storage": storage, "couchdb": {"version": version},
            "view": {"language": label, "design": {"id": "_design/app"}},
            "bench": {"language": label, "storage_label": storage},
            **({"beam_activity": rec} if rec is not None else {})}


def test_section_groups_per_engine_and_version_and_says_what_is_missing(record):
    docs = [_result("javascript", record), _result("javascript", record), _result("javascript", record, "3.5.2"),
            _result("bun", beam.absent("CouchDB is not on this machine")), _result("bun", None)]
    sec = beam_activity.section(docs)
    assert [(e["engine"], e["couchdb"], e["builds"]) for e in sec["engines"]] == [("javascript", "3.5.0", 2),
                                                                                  ("javascript", "3.5.2", 1)]
    one = beam.summary(record)
    assert sec["engines"][0]["activities"] == one["activities"]   # the same build twice: the same shares
    assert sec["missing"] == ["CouchDB is not on this machine"]
    assert beam_activity.section([_result("bun", None)]) is None   # files older than the probe: no section


def test_console_has_one_line_per_engine(record):
    sec = beam_activity.section([_result("javascript", record), _result("bun", record)])
    lines = beam_activity.lines(sec)
    assert len(lines) == 3 and lines[0].startswith("beam's activity")
    js = next(x for x in lines if x.strip().startswith("javascript"))
    assert "threads busy" in js and "thread time, not CPU" in js and "busy wait" in js and "loader" in js and "%" in js
    top = next(iter(beam.summary(record)["activities"]))
    assert top in js


def test_a_builds_lines_name_what_is_missing(record):
    assert beam_activity.build_lines(_result("bun", beam.absent("paused here"))) == ["no beam activity: paused here"]
    got = beam_activity.build_lines(_result("javascript", record))
    assert got[0].startswith("beam's activity: work") and "0.02 s CPU during the build, 0.37 s in all" in got[-1]
    assert beam_activity.build_lines(_result("javascript", None)) == []
    split = copy.deepcopy(record)
    split["probe"]["cpu_after_build_s"] = 0.06
    assert "0.02 s CPU during the build, 0.06 s after it collecting its figures, 0.37 s in all" in \
        beam_activity.build_lines(_result("javascript", split))[-1]


def test_a_cluster_build_has_a_line_per_node(record):
    rec = copy.deepcopy(record)
    (name, node), = rec["nodes"].items()
    rec["nodes"]["dragnet2@127.0.0.1"] = node
    got = beam_activity.build_lines(_result("javascript", rec))
    assert sum(1 for x in got if x.startswith("  node ")) == 2


def test_html_section_stacks_the_activities(record):
    sec = beam_activity.section([_result("javascript", record), _result("bun", record, storage="tmpfs")])
    (section,) = beam_activity.html_sections(sec)
    assert section.id == "beam-activity" and len(section.rows) == 2
    (chart,) = section.charts
    assert chart.layout["barmode"] == "stack"
    for engine in range(2):     # each engine's bar sums to 100% of its work
        assert sum(t["y"][engine] for t in chart.data) == pytest.approx(100, abs=0.5)
    assert beam_activity.html_sections(None) == []


def test_report_json_and_text_carry_the_section(record, tmp_path):
    import json

    from dragnet.report import model
    from dragnet.report.render import json as render_json
    from dragnet.report.render import text

    rep = model.Report(("x",), docs=[])
    rep.beam = beam_activity.section([_result("javascript", record)])
    assert render_json.render(rep)["beam_activity"]["engines"][0]["engine"] == "javascript"
    json.dumps(render_json.render(rep))
    out: list[str] = []
    text.tail(rep, lambda s="", nl=True: out.append(s), markdown=False)
    assert any("beam's activity" in s for s in out)
