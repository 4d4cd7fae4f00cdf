"""Render the tables `report` draws from no evidence folder (size sweeps and their raw samples, "disk matters?",
the load's tables, compare's and the page's compare table, `history`'s), with the dragnet at SRC, to compare two versions (tools/render_check.py covers `report`'s folders).

    cd NEW && .venv/bin/python tools/render_check_tables.py OLD > /tmp/tables-old.txt
    cd NEW && .venv/bin/python tools/render_check_tables.py . > /tmp/tables-new.txt
    cmp /tmp/tables-old.txt /tmp/tables-new.txt

Run from the tree holding docs/. A size sweep's chart is drawn into /tmp, never into docs/.
"""

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(sys.argv[1]).resolve()))

import dragnet  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from dragnet.bench import sizes as sz  # noqa: E402
from dragnet.cli import main  # noqa: E402
from dragnet.report import html as hr, terminal  # noqa: E402
from dragnet.report import load as L  # noqa: E402
from dragnet.report.model import Report  # noqa: E402
from dragnet.report.render import markdown as md  # noqa: E402
from dragnet.report.sizes_table import sweep_report  # noqa: E402

print("dragnet", Path(dragnet.__file__).parent, file=sys.stderr)
root = Path.cwd()


def sizes() -> None:
    for summ in sorted(root.glob("docs/**/" + sz.SUMMARY)):
        folder = summ.parent
        print("=====", folder.relative_to(root))
        try:
            rep = sweep_report(folder, "/tmp/render-check-tables-sizes.png")
        except Exception as e:
            print("sweep_report failed:", type(e).__name__, e)
            continue
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            terminal.render_sizes(rep)
        print(buf.getvalue().replace(str(folder), "F"))
        (sw,) = hr.load_sizes([folder])
        secs, _ = hr.size_sections(hr.Inputs([], sizes=[sw]))
        for s in secs:
            print(s.columns, s.rows)
        for n, rows in rep["disk"].items():
            print(md.render(Report(results=("x",), disk_rows=rows, disk_reference=rep["reference"])))
            dsecs, _ = hr.disk_sections(hr.Inputs([], disk_rows=rows, disk_ref=rep["reference"]), [])
            for s in dsecs:
                print(s.columns, s.rows)


def _doc(lang, load, repeat, wall, bench_id="b1", storage="disk", extra=None):
    return {"summary": {"ok": True, "wall_time_s": wall, "docs": 1000, "docs_per_sec_wall": 1000 / wall},
            "bench": {"language": lang, "repeat": repeat, "id": bench_id, "storage_label": storage,
                      "axes": {"language": lang, "storage": storage, "scenario": "", "size": None, "load": load,
                               **(extra or {})}}}


def loads() -> None:
    sets = []
    for f in sorted(root.glob("docs/studies/**/*-builds.json")):
        b = json.loads(f.read_text()).get("builds") or []
        sets.append((str(f.relative_to(root)), b))
        # the same builds with bench records, so the slowdown pairs them
        sets.append((str(f.relative_to(root)) + " +bench", [
            {**x, **_doc("javascript" if i % 2 else "quickjs", (x.get("load") or {}).get("spec") or "none", i // 4,
                         (x.get("summary") or {}).get("wall_time_s") or 1.0)}
            | ({"load": x["load"]} if x.get("load") else {}) for i, x in enumerate(b)]))
    made = []
    for r, (idle, loaded) in enumerate([(10, 15), (20, 30), (12, 18.5), (11, 16)]):
        made += [_doc("javascript", "none", r, idle), _doc("javascript", "writes=200/s", r, loaded)]
    made += [_doc("bun", "writes=5/s", 0, 3.0), _doc("bun", "none", 0, 2.0),
             _doc("bun", "writes=5/s", 1, 3.0, extra={"q": 2})]
    full = {"spec": "writes=20/s", "kinds": {"writes": {"asked_per_s": 20, "before": {
        "ok": 9, "achieved_per_s": 19.5, "latency": {"p50_ms": 1.234, "p95_ms": 12.5, "p99_ms": 1234.5, "max_ms": None},
        "errors": {"500": 2, "timeout": 1}, "conflicts": 3, "not_sent": 4}, "build": {"ok": 3, "latency": {}}}},
        "writes_check": {"acknowledged": 3, "lost": 0}, "purge": {"purged": 3, "written": 3},
        "cpu_share_of_core": 0.123, "written_during_build": 7, "index": {"error": "timeout"}, "driver": "go"}
    for i, d in enumerate(made):
        if d["bench"]["axes"]["load"] != "none":
            d["load"] = full if i % 2 else {"spec": "writes=5/s", "kinds": {}, "index": {"changes_not_indexed": 4}}
    sets.append(("made-up", made))
    sets.append(("made-up two benches", made + [_doc("javascript", "writes=200/s", 0, 15, bench_id="b2")
                                                | {"load": full}]))
    for name, docs in sets:
        print("=====", name)
        try:
            sec = L.section(docs)
        except Exception as e:
            print("failed:", type(e).__name__, e)
            continue
        print(json.dumps(sec, sort_keys=True, default=str))
        if sec:
            print("\n".join(L.lines(sec)))


def compares() -> None:
    ci = "docs/studies/compare/ci"
    pairs = [(f"{ci}/base", f"{ci}/slower"), (f"{ci}/base", f"{ci}/renamed"), (f"{ci}/base/r1", f"{ci}/slower/r1"),
             (f"{ci}/base/r1", f"{ci}/base/r2")]
    nv = sorted(str(p) for p in Path("docs/studies/nouveau").iterdir() if p.is_dir())
    pairs += list(zip(nv, nv[1:]))[:6]
    runs = []
    for old, new in pairs:
        for extra in ([], ["--format", "markdown"], ["--fail-if-slower", "5%"], ["--metric", "wall"],
                      ["--fail-if-slower", "5%", "--format", "markdown"]):
            runs.append(["compare", old, new, *extra])
        runs.append(["report", new, "--baseline", old])
        runs.append(["report", new, "--baseline", old, "--format", "markdown"])
    for args in runs:
        res = CliRunner().invoke(main, args)
        print("=====", " ".join(args), "rc", res.exit_code)
        print(res.stdout)
        if res.exception and not isinstance(res.exception, SystemExit):
            print("exception", type(res.exception).__name__, res.exception)


def page_compares() -> None:
    """The page's compare table and raw samples (report --html --compare-json), from compare's JSON of the pairs
    compares() runs, and the same JSON with its intervals as ci_low/ci_high."""
    from dataclasses import replace

    from dragnet.report import compare
    from dragnet.report.html_page import build_page
    from dragnet.results.load import load_results

    ci = "docs/studies/compare/ci"
    pairs = [(f"{ci}/base", f"{ci}/slower"), (f"{ci}/base", f"{ci}/renamed"), (f"{ci}/base/r1", f"{ci}/slower/r1"),
             (f"{ci}/base/r1", f"{ci}/base/r2")]
    nv = sorted(str(p) for p in Path("docs/studies/nouveau").iterdir() if p.is_dir())
    pairs += list(zip(nv, nv[1:]))[:6]
    for old, new in pairs:
        for kw in ({}, {"threshold": 0.05}, {"metric": "wall"}):
            print("===== page compare", old, new, kw)
            try:
                doc = json.loads(json.dumps(compare.compare(load_results([old]), load_results([new]), **kw)
                                            .to_json(), default=str))
            except Exception as e:
                print("failed:", type(e).__name__, e)
                continue
            split = {**doc, "cells": [{k: v for k, v in c.items() if k != "ci"} | {"ci_low": 0.9, "ci_high": None}
                                      for c in doc["cells"]]}
            for d in (doc, split):
                secs, raws = hr.compare_sections(d, {"docs/x": "raw/x"})
                print(build_page("t", [replace(s, charts=[]) for s in secs + raws]))


def size_raws() -> None:
    """The page's raw-sample blocks of each size sweep, with and without copies of their first files."""
    from dataclasses import replace

    from dragnet.report.html_page import build_page

    for summ in sorted(root.glob("docs/**/" + sz.SUMMARY)):
        folder = summ.parent
        print("===== size raws", folder.relative_to(root))
        try:
            (sw,) = hr.load_sizes([folder])
        except Exception as e:
            print("failed:", type(e).__name__, e)
            continue
        firsts = [str(Path(sw["folder"]) / f"size-{r['size']}" / r["result_file"])
                  for r in sz.sweep_runs(sw["manifests"]) if r.get("result_file")][:3]
        for hrefs in ({}, {f: f"raw/{i}.json" for i, f in enumerate(firsts)}):
            _, raws = hr.size_sections(hr.Inputs([], sizes=[sw], hrefs=hrefs))
            print(build_page("t", [replace(s, charts=[]) for s in raws]).replace(str(root), "R"))


def histories() -> None:
    """`dragnet history`'s console table from made-up store entries (two cells, steps and too-small groups)."""
    from dragnet.report import history as hi
    from dragnet.report.render import console

    vals = [[100, 101, 99, 100.5], [100, 102, 101], [80, 81, 79.5, 80.2], [80.1, 80.3, 79.9], [0, 1]]
    entries = [{"id": f"r{i}", "date": f"2026-11-0{i + 1}T10:00:00.123456", "name": "n" if i % 2 else None,
                "couchdb": "3.5.0" if i < 3 else "3.4.2",
                "cells": [{"axes": {"language": "javascript", "storage": "disk", "ddoc": f"h{i // 2}"},
                           "docs_s": v, "index_bytes": [x * 3 for x in v]},
                          {"axes": {"language": "erlang", "storage": "tmpfs", "ddoc": "h"},
                           "docs_s": [x * 2 for x in v], "index_bytes": [x * 7 for x in v]}]}
               for i, v in enumerate(vals)]
    for metric in ("docs_s", "index_bytes"):
        for by in hi.BY:
            print("===== history", metric, by)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                console.history(hi.History("/store", metric, by, hi.series(entries, metric, by), len(entries)))
            print(buf.getvalue())


if __name__ == "__main__":
    sizes()
    loads()
    compares()
    page_compares()
    size_raws()
    histories()
