"""--profile's outputs without a server: console lines, JSON, the HTML section with its flame graph, and the
CLI's refusals. The profiles are the two real ones in tests/data/profiles, as a results file would hold them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.measure import profile, stages
from dragnet.report import flame, html_page, profile_text

DATA = Path(__file__).parent / "data" / "profiles"


def _result(tmp_path: Path, name: str, language: str, version: str = "3.5.0") -> dict:
    folded = f"{name}.folded.gz"
    shutil.copy(DATA / folded, tmp_path / folded)
    stacks = profile.read_folded(tmp_path / folded)
    sh = stages.shares(stacks)
    n = sum(stacks.values())
    return {"_source": str(tmp_path / f"addview-{name}.json"), "couchdb": {"version": version},
            "db": {"name": "decl"}, "view": {"language": language, "path": f"views/income/map.{language[:2]}"},
            "summary": {"docs": 3000}, "cpu": {"cpu_s": n * 0.002 * 1.02},
            "profile": {"samples": n, "sampled_cpu_s": n * 0.002, "perf_cpu_s": 0.25, "erlang_named_share": 0.04,
                        "stages": sh.as_dict(0.002), "notes": [], "folded": folded}}


def test_one_build_says_its_stages_perfs_cost_the_folded_file_and_levers(tmp_path):
    r = _result(tmp_path, "decl-couchjs-3.5.0", "javascript")
    lines = profile_text.build_lines(r)
    assert lines[0].startswith("profile: GC (dirty CPU schedulers: full GCs) 4") and "the query server's own CPU 3" in lines[0]
    assert "perf's own CPU 0.25 s, 3.0% of CouchDB's" in lines[1]
    assert f"profile: folded stacks in {tmp_path / 'decl-couchjs-3.5.0.folded.gz'}" in lines
    assert any(line.startswith("lever (GC") and "upgrade to CouchDB 3.5.2" in line for line in lines)
    assert "  dragnet bench --db decl --languages javascript --couchdb <3.5.0 install>,<3.5.2 install> --repeat 3" in lines


def test_a_missing_part_is_one_line():
    r = {"profile": {"absent": "perf not found (install linux-perf): no function profile; the other figures "
                                "are still reported"}}
    assert profile_text.build_lines(r) == [f"profile: {r['profile']['absent']}"]
    assert profile_text.as_json(r) == {"absent": r["profile"]["absent"]}
    assert profile_text.build_lines({}) == [] and profile_text.as_json({}) is None


def test_bench_lines_one_per_build_kind_summed_over_its_builds(tmp_path):
    js = _result(tmp_path, "decl-couchjs-3.5.0", "javascript")
    erl = _result(tmp_path, "decl-erlang-3.5.0", "erlang")
    lines = profile_text.bench_lines([js, js, erl])
    assert lines[0].startswith("profile (")
    kinds = [line for line in lines if line.startswith("  javascript on 3.5.0:") or line.startswith("  erlang on 3.5.0:")]
    assert len(kinds) == 2 and "(2 builds" in kinds[0] and "(1 builds" in kinds[1]
    assert "the query server's own CPU" in kinds[0] and "the query server's own CPU" not in kinds[1]
    j = profile_text.bench_json([js, erl])
    assert set(j) == {"javascript on 3.5.0", "erlang on 3.5.0"}
    assert sum(v["share"] for v in j["erlang on 3.5.0"]["stages"].values()) == pytest.approx(1, abs=0.01)
    assert j["erlang on 3.5.0"]["folded"] == [str(tmp_path / "decl-erlang-3.5.0.folded.gz")]


def test_json_has_the_stages_the_folded_path_and_levers(tmp_path):
    j = profile_text.as_json(_result(tmp_path, "decl-erlang-3.5.0", "erlang", version="3.5.2"))
    assert j["folded"] == str(tmp_path / "decl-erlang-3.5.0.folded.gz")
    assert j["stages"]["map_fun"]["samples"] > 0
    names = [lv["lever"] for lv in j["levers"]]
    assert "[view_updater] gc_interval_docs" in names and "upgrade to CouchDB 3.5.2" not in names


def test_html_section_draws_a_flame_graph_per_build_kind_or_says_why_not(tmp_path):
    docs = [_result(tmp_path, "decl-couchjs-3.5.0", "javascript"), _result(tmp_path, "decl-erlang-3.5.0", "erlang")]
    (sec,) = flame.html_sections(docs, tmp_path / "html")
    assert [row[0] for row in sec.rows] == ["javascript on 3.5.0", "erlang on 3.5.0"]
    if flame.find_inferno() is None:
        assert any("inferno-flamegraph not found" in n for n in sec.notes) and not sec.images
        return
    assert [src for src, _ in sec.images] == ["flame-javascript-on-3.5.0.svg", "flame-erlang-on-3.5.0.svg"]
    svg = (tmp_path / "html" / "flame-erlang-on-3.5.0.svg").read_text()
    assert svg.startswith("<?xml") and "couch_native_process" in svg
    page = html_page.section_html(sec, [])
    assert '<object type="image/svg+xml" data="flame-erlang-on-3.5.0.svg"' in page


def test_html_without_inferno_keeps_the_stage_table(tmp_path):
    docs = [_result(tmp_path, "decl-couchjs-3.5.0", "javascript")]
    (sec,) = flame.html_sections(docs, tmp_path / "html", env={"PATH": "/nonexistent", "CARGO_HOME": "/nonexistent",
                                                                "HOME": "/nonexistent"})
    if (Path(flame.CHECKOUT) / ".tools" / "bin" / flame.TOOL).exists():
        pytest.skip("inferno is in the checkout's .tools: the no-inferno path cannot be reached here")
    assert sec.rows and not sec.images and "not found" in sec.notes[0]


@pytest.mark.parametrize("argv,message", [
    (["addview", "views/income/map.js", "--db", "d", "--profile"], "--profile goes with --benchmark"),
    (["addview", "--db", "d", "--mango", "x.json", "--benchmark", "--profile"], "not --nouveau, --mango or --per-view"),
    (["bench", "--db", "d", "--nouveau", "x.js", "--profile"], "--profile goes with view builds, not --nouveau"),
    (["forecast", "--db", "d", "--from-sweep", ".", "--profile"], "not with --from-sweep"),
])
def test_profile_with_what_builds_no_view_is_a_one_line_error(argv, message):
    res = CliRunner().invoke(main, argv, env={"DRAGNET_COUCHDB_URL": "http://127.0.0.1:9"})
    assert res.exit_code == 2 and message in res.output


def test_flame_graphs_draw_direct_recursion_and_threads_of_a_kind_as_one_frame():
    from collections import Counter

    got = flame.collapse_recursion(Counter({"beam.smp;1_scheduler;$lists:map_1/2;$lists:map_1/2;$a:b/0": 2,
                                            "beam.smp;2_scheduler;$lists:map_1/2;$a:b/0": 1,
                                            "couchjs;couchjs;[jit];[jit]": 4}))
    assert got == {"beam.smp;scheduler;$lists:map_1/2;$a:b/0": 3, "couchjs;couchjs;[jit]": 4}


def test_a_profile_too_thin_for_the_build_names_no_levers(tmp_path):
    """Few samples, or samples covering under half the kernel's CPU of CouchDB: shares shown, levers not."""
    r = _result(tmp_path, "decl-couchjs-3.5.0", "javascript")
    assert profile_text.thin([r]) is None
    lossy = dict(r, cpu={"cpu_s": r["profile"]["sampled_cpu_s"] * 3})
    few = dict(r, profile=dict(r["profile"], samples=12))
    for thin, why in ((lossy, "the samples cover 33% of the"), (few, "only 12 samples")):
        lines = profile_text.build_lines(thin)
        assert lines[0].startswith("profile: GC")
        assert not any(line.startswith("lever") for line in lines)
        assert any(line.startswith("profile: no levers named: ") and why in line for line in lines)
        assert profile_text.as_json(thin)["levers"] == [] and why in profile_text.as_json(thin)["thin"]
        bench = profile_text.bench_lines([thin])
        assert any("no levers named" in line for line in bench) and not any("lever for" in line for line in bench)
