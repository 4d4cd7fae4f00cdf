"""Why the cost per document grows (dragnet.forecast.growth), pure: no server."""

from pathlib import Path

from dragnet.forecast import growth as gr
from dragnet.forecast import run as fr


def _run(n, wall, beam, qs, wait, run, rss, compaction):
    manifest = {"wall_time_s": wall, "pidstat_peak_rss_kb": {"beam": rss},
                "sizes": {"peak_disk": {"compaction": compaction, "compactions_at_once": 1 if compaction else 0}}}
    result = {"cpu": {"run_s": run, "wait_s": wait, "by_process": {"beam.smp": beam, "couchjs": qs, "sh": 0.0}}}
    return gr.row(n, manifest, result)


def test_a_falling_docs_per_second_is_explained_by_what_rose():
    # issue 32's sweep: docs/s 7,995 → 2,645 from 2,500 to 20,000; beam's CPU per document rising, couchjs' flat
    rows = [_run(n, n / dps, beam, n * 4e-4, 0.5 * (beam + n * 4e-4), beam + n * 4e-4, rss, comp)
            for n, dps, beam, rss, comp in ((2500, 7995, 0.2, 100_000, 0), (5000, 5664, 0.6, 120_000, 0),
                                            (10000, 3660, 1.8, 150_000, 1e6), (20000, 2645, 5.0, 200_000, 3e6))]
    g = gr.explain(rows)
    assert abs(g["docs_per_s_per_doubling"] - (2645 / 7995) ** (1 / 3)) < 1e-9
    s = g["sentence"]
    assert s.startswith("docs/s falls 31% per doubling (7,995 at 2,500 → 2,645 at 20,000)"), s
    assert "beam's CPU per 1,000 documents rose" in s and "the query server's CPU per 1,000 documents held" in s
    assert "beam's peak memory rose" in s and "compaction ran during the builds of 10,000, 20,000" in s
    assert "waiting for a CPU" not in s           # wait per run held at 0.5
    assert [x["docs"] for x in g["sizes"]] == [2500, 5000, 10000, 20000]


def test_a_steady_docs_per_second_says_so_and_one_size_says_nothing():
    rows = [_run(n, n / 1000, n * 1e-4, n * 3e-4, 0.1, 1.0, 1e5, 0) for n in (5000, 10000, 20000)]
    assert "does not grow" in gr.explain(rows)["sentence"]
    assert gr.explain(rows[:1])["sentence"] is None


def test_recorded_sweep_gets_its_growth_in_the_forecast(tmp_path):
    docs = Path(__file__).resolve().parent.parent / "docs/studies/forecast/bt5-app"
    out = fr.from_sweep(docs, fr.target_from_docs(200_000, "1318053575", 8), out_dir=tmp_path)
    g = out["forecasts"][""]["javascript"]["growth"]
    # its builds' results files (gzipped in docs/) hold pidstat's CPU share per process (no kernel accounting yet)
    assert [s["docs"] for s in g["sizes"]] == [5000, 10000, 20000, 40000]
    assert all(s["beam_cpu_per_1000"] > 0 and s["query_server_cpu_per_1000"] > 0 for s in g["sizes"])
    assert g["sentence"]
