"""The library entry points behind `qsbench` and `forecast` refuse bad requests in one line, before anything
runs, with no CLI around them (runner/qsbench, forecast/session)."""

import pytest

from dragnet.errors import UsageError
from dragnet.runner.forecast import ForecastRequest, forecast
from dragnet.runner.qsbench import QsbenchRequest, qsbench


@pytest.mark.parametrize("kw, message", [
    ({"docs_file": "x.jsonl", "count": 3}, "give --docs FILE or --count, not both"),
    ({"fraction": 0.5}, "--fraction needs --docs URL/db"),
    ({"languages": "javascript"}, "--languages goes with --ddoc (use --servers)"),
    ({"check_reduce": True}, "--check-reduce and --strict go with --ddoc"),
    ({"couchdb_url": "http://127.0.0.1:1", "quiet": True}, "--couchdb goes with a view folder's table"),
    ({"ddoc_source": "x.json", "shards": 2}, "--ddoc runs one shard, without --budget or --plot"),
    ({"repeat": "zero"}, "--repeat zero: expected auto or a number of rounds"),
])
def test_qsbench_refuses_before_running(kw, message, tmp_path):
    events = []
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        qsbench(QsbenchRequest(cache_dir=str(tmp_path), results_dir=str(tmp_path), **kw),
                on_event=lambda kind, d: events.append(kind))
    assert events == [] and list(tmp_path.iterdir()) == []     # nothing ran, nothing written


@pytest.mark.parametrize("kw, message", [
    ({}, "give one of --target URL/db and --target-docs N"),
    ({"target_docs": "10k", "views": "v", "ddoc_source": "d.json"}, "--ddoc and --views: give one of them"),
    ({"target_docs": "10k", "budget": "soon"}, "--budget soon"),
    ({"nouveau_source": "n.json", "views": "v"}, "--nouveau: not with --views"),
    ({"target_docs": "10k", "build_target": True}, "--build-target goes with --nouveau"),
])
def test_forecast_refuses_before_running(kw, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        forecast(ForecastRequest(url="http://127.0.0.1:1", db="x", results_dir=str(tmp_path / "f"), **kw))
    assert list(tmp_path.iterdir()) == []
