"""The ceiling (query_servers/ceiling, dragnet-ceiling): the real binary over the line protocol, and its record."""

import subprocess

import pytest

from dragnet.index import views as views
from dragnet.measure import pidstat as pidstat
from dragnet.servers import discovery as qs
from dragnet.servers import registry as qs_registry
from dragnet.servers.compiling import build_ceiling


@pytest.fixture(scope="module")
def ceiling():
    built = build_ceiling()
    if not built.ok:
        pytest.skip(f"dragnet-ceiling cannot be built here: {built.detail}")
    return built.detail


def _talk(binary: str, lines: list[str]) -> list[str]:
    out = subprocess.run([binary], input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_one_fixed_row_per_function_since_the_last_reset(ceiling):
    answers = _talk(ceiling, [
        '["reset",{"reduce_limit":true}]', '["add_lib",{"views":{}}]', '["add_fun","function(doc){emit(1,2)}"]',
        '["add_fun","def fun(doc): yield 1, 2"]', '["map_doc",{"_id":"a","x":[1,2,3]}]',
        '["reset",{}]', '["add_fun","x"]', '["map_doc",{"_id":"b"}]',
    ])
    assert answers == ["true", "true", "true", "true", '[[["k",1]],[["k",1]]]', "true", "true", '[[["k",1]]]']


def test_documents_are_not_read(ceiling):
    # not JSON, and longer than one read: still the fixed row, as nothing past the command is looked at
    huge = '["map_doc",{"_id":' + "x" * 200_000 + " not json"
    answers = _talk(ceiling, ['["reset",{}]', '["add_fun","f"]', huge, '["map_doc",{}]'])
    assert answers == ["true", "true", '[[["k",1]]]', '[[["k",1]]]']


def test_reduce_and_ddoc_are_refused_not_faked(ceiling):
    answers = _talk(ceiling, ['["reduce",["function(k,v){return 1}"],[[["k","id"],1]]]',
                              '["rereduce",["f"],[1]]', '["ddoc","new","_design/x",{}]'])
    assert len(answers) == 3 and all(a.startswith('["error","ceiling"') for a in answers)


def test_record_discovery_and_language(ceiling, tmp_path):
    found = qs_registry.SERVER["ceiling"].find({"PATH": str(tmp_path)})
    assert found.argv == (str(qs.CEILING_QS),)
    lang = qs_registry.LANGUAGE["ceiling"]
    assert lang.family == "any" and not lang.reads_docs and qs_registry.ceiling_language() == "ceiling"
    assert not qs_registry.reads_documents("ceiling") and qs_registry.reads_documents("javascript")
    assert pidstat.family(str(qs.CEILING_QS)) == "ceiling"
    # any view file goes on it: its source is never looked at
    assert views.load("views/income/map.py", "ceiling").language == "ceiling"
    assert views.ALIASES["null"] == "ceiling"


def test_qsbench_runs_it_only_when_named_and_never_compares_its_rows(ceiling, tmp_path):
    from dragnet.qsbench import run as qsbench

    specs, skipped = qsbench.available_servers()
    if "python3" not in {s.name for s in specs}:
        pytest.skip("no python3 server here")
    chosen, _ = qsbench.select_servers(specs, skipped, None, "views/income")
    assert "ceiling" not in [s.name for s, _ in chosen]
    chosen, _ = qsbench.select_servers(specs, skipped, ["ceiling", "python3"], "views/income")
    docs_file = tmp_path / "d.jsonl"
    docs_file.write_text("".join('{"_id": "d%d", "step_0": {"declarationType": "1"}}\n' % i for i in range(20)))
    bench = qsbench.run_benchmark(chosen, qsbench.load_docs(docs_file), repeat=1, warmup=0)
    by_name = {r.spec.name: r for r in bench.results}
    # the real processes ran; the ceiling's fixed rows differ from python3's, and that is no mismatch
    assert by_name["ceiling"].status == "ok" and by_name["ceiling"].mismatch_count == 0
    assert by_name["python3"].status == "ok" and bench.reference == "python3"
