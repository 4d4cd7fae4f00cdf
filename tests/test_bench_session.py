"""`bench` as one library call (dragnet.runner.bench): bad options are one-line errors before anything runs
(the URL below has no server, so a check that ran anything would fail otherwise), and the renderer says what an
interrupted bench kept on the stream each mode always used."""

from __future__ import annotations

import pytest

from dragnet.errors import UsageError
from dragnet.runner import bench as session
from dragnet.report.render import console as render_console

NOWHERE = "http://127.0.0.1:9"


@pytest.mark.parametrize("options, message", [
    ({"nouveau_source": "x.js", "sizes_text": "1,2"}, "--nouveau with --sizes: not combinable yet"),
    ({"queries": ("a",)}, "--query goes with --nouveau"),
    ({"storages": "ssd"}, "--storage ssd: expected disk or tmpfs"),
    ({"storages": "disk", "storage_label": "x"}, "--storage-label is for a CouchDB dragnet does not manage"),
    ({"view_names": "v"}, "--view and --reference go with --ddoc"),
    ({"languages": "nosuch"}, "unknown language 'nosuch'"),
    ({"plot_path": "x.png", "languages": "javascript"}, "--plot goes with --sizes"),
    ({"sizes_text": "1x", "languages": "javascript"}, "not a document count: '1x'"),
    ({"sizes_text": "10,20", "storages": "disk", "languages": "javascript"}, "--sizes and --storage"),
    ({"sizes_text": "10,20", "languages": "javascript", "axis_raw": {"q_text": "2,4"}},
     "--sizes with --q N,N or several --ddoc"),
])
def test_bad_options_are_one_line_errors_before_anything_runs(options, message, tmp_path):
    events = []
    with pytest.raises(UsageError) as exc:
        session.bench(session.BenchRequest(url=NOWHERE, db="d", store_dir=str(tmp_path / "store"),
                                           results_dir=str(tmp_path / "out"), **options),
                      lambda kind, d: events.append(kind))
    assert message in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "out").exists() and "begin" not in events


@pytest.mark.parametrize("mode, stream", [(session.MATRIX, "err"), (session.GATE, "out"), (session.MANGO, "err"),
                                          (session.SIZES, "err")])
def test_an_interrupted_bench_says_what_it_kept_on_its_modes_stream(mode, stream, capsys):
    render_console.bench_outcome(session.BenchOutcome(mode, exit_code=130, interrupted="interrupted: kept"))
    got = capsys.readouterr()
    assert getattr(got, stream).strip() == "interrupted: kept"
    assert getattr(got, "out" if stream == "err" else "err") == ""


def test_a_design_docs_nouveau_indexes_are_skipped_in_one_line_where_the_bench_restarts_couchdb(tmp_path):
    import json
    from pathlib import Path

    from dragnet.index import design as dsg

    doc = json.loads((Path(__file__).resolve().parent / "ddocs" / "app.json").read_text())
    doc["nouveau"] = {"names": {"index": "function (doc) { index('text', 'name', doc.name); }"}}
    (tmp_path / "d.json").write_text(json.dumps(doc))
    seen = []
    got = session._search_plan(dsg.load(str(tmp_path / "d.json")), session.BenchRequest(url="http://127.0.0.1:9",
                               db="x"), ["disk", "tmpfs"], [], _NoAxes(), ["javascript"],
                               lambda kind, d: seen.append((kind, d["message"])))
    assert got is None and len(seen) == 1 and seen[0][0] == "skipped"
    assert "Nouveau indexes names of _design/app skipped" in seen[0][1] and "--storage" in seen[0][1]


class _NoAxes:
    def axes(self, backend):
        return []
