"""Per-view table: shares and the shared-pass saving computed from the builds' results documents."""

from __future__ import annotations

from dragnet.index import per_view as pv
from dragnet.report.render import build_text as build_text


def res(wall, tasks=None, dps=None):
    return {"summary": {"wall_time_s": wall, "total_time_s": tasks, "docs_per_sec_wall": dps}}


def test_shares_and_saving_from_results():
    rows = pv.compare(res(10.0, 9.5, 100.0), {"a": res(6.0, 5.5, 166.7), "b": res(8.0, 7.0, 125.0)},
                      {"a": "results/a.json"})
    assert [r.view for r in rows] == [pv.WHOLE, "a", "b"]
    assert rows[0].share_of_whole == 1.0 and rows[1].share_of_whole == 0.6 and rows[2].share_of_whole == 0.8
    assert rows[1].results_file == "results/a.json" and rows[2].results_file is None
    assert pv.shared_pass_saving_s(rows) == 4.0
    text = "\n".join(build_text.format_table(rows))
    assert "60%" in text and "+4.00s against the single pass" in text


def test_missing_figures_show_as_na_and_no_saving():
    rows = pv.compare(res(None), {"a": res(3.0)})
    assert rows[1].share_of_whole is None and pv.shared_pass_saving_s(rows) is None
    assert "n/a" in build_text.format_table(rows)[1]


def test_run_builds_whole_then_each_view_alone():
    from pathlib import Path
    from dragnet.index import design as design

    d = design.load(str(Path(__file__).parent / "ddocs" / "app"))
    built = []

    def build(sub, label):
        built.append((label, sub.view_names))
        return res(float(len(sub.view_names))), None

    rows, results = pv.run(d, build)
    assert built[0] == (pv.WHOLE, d.view_names)
    assert built[1:] == [(v, [v]) for v in d.view_names]
    assert set(results) == {pv.WHOLE, *d.view_names}
    assert rows[0].wall_time_s == float(len(d.view_names)) and all(r.wall_time_s == 1.0 for r in rows[1:])
