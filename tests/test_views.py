"""The income view in every language emits the same rows; view files load with the right language.

JavaScript variants run in node, the Python variant in-process, Erlang through escript (docs written
as EJSON terms, the fun evaluated the way CouchDB's native query server does: erl_eval with `Emit` bound).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from dragnet.index import views as views
from dragnet.errors import UsageError
from conftest import normalised_declarations

REPO = Path(__file__).resolve().parent.parent
VIEWS = REPO / "views"
FIXTURES = REPO.parent / "shared" / "fixtures" / "couchdb-3.5.0"

# --------------------------------------------------------------------------- documents


def branch_docs() -> list[dict]:
    """Hand-made documents covering every branch of the function."""
    s1 = {"lastname": "Шевченко", "firstname": "Тарас", "middlename": "Григорович",
          "workPost": "суддя", "workPlace": "Київський районний суд"}

    def doc(i, step_0, step_11=None, step_1=s1, **extra):
        d = {"_id": f"nacp_test_{i:03d}", "step_0": step_0, "step_1": step_1}
        if step_11 is not None:
            d["step_11"] = step_11
        d.update(extra)
        return d

    t1 = {"declarationType": "1", "declarationYear1": "2016"}
    return [
        # everything at once: declarant/family x salary/other, floats, non-objects, odd sizes
        doc(1, t1, {
            "1451264498626": {"person": "1", "objectType": "salarymain", "sizeIncome": 1000.1},
            "1451264498627": {"person": "1", "objectType": "rent", "sizeIncome": 0.2},
            "1451264498628": {"person": "1", "objectType": "salarymain", "sizeIncome": 0.7},
            "1451264498629": {"person": "2", "objectType": "salarymain", "sizeIncome": 33.33},
            "1451264498630": {"person": "3", "objectType": "gift", "sizeIncome": 12},
            "1451264498631": {"objectType": "salarymain", "sizeIncome": 5},          # no person: family
            "1451264498632": "not an object",
            "1451264498633": 42,
            "1451264498634": None,
            "1451264498635": [1, 2, 3],                                                # array: adds nothing
            "1451264498636": {"person": "1", "objectType": "salarymain", "sizeIncome": "1 000,50"},  # string: 0
            "1451264498637": {"person": "1", "objectType": "salarymain"},            # missing size: 0
            "1451264498638": {"person": "1", "objectType": "salarymain", "sizeIncome": True},  # bool: 0
            "1451264498639": {"person": 1, "objectType": "salarymain", "sizeIncome": 7},  # number person: family
        }),
        doc(2, t1),                                                   # no step_11: zeros
        doc(3, t1, "no incomes"),                                     # step_11 not an object
        doc(4, t1, {"empty": "Об'єкт декларування відсутній"}),      # empty-section marker
        doc(5, dict(t1, changesYear="2016"), {"1": {"person": "1", "objectType": "salarymain", "sizeIncome": 1}}),
        doc(6, {"declarationType": "2", "declarationYear1": "2016"}, {"1": {"person": "1", "sizeIncome": 1}}),
        doc(7, {"declarationType": 1}),                               # number, not "1": skipped
        {"_id": "nacp_test_008", "step_1": s1},                      # no step_0
        doc(9, "1"),                                                  # step_0 not an object
        doc(10, {"declarationType": "1"}, {"a": {"person": "1", "objectType": "salarymain", "sizeIncome": 3}},
            step_1={"lastname": "Бойко", "firstname": "Олена", "middlename": "Іванівна"}),  # no post/place/year
        # integer-like keys: JS visits them in numeric order, Python/Erlang in document order
        doc(11, t1, {"10": {"person": "1", "objectType": "salarymain", "sizeIncome": 0.1},
                     "2": {"person": "1", "objectType": "salarymain", "sizeIncome": 0.2},
                     "1": {"person": "1", "objectType": "salarymain", "sizeIncome": 0.3},
                     "x": {"person": "2", "objectType": "salarymain", "sizeIncome": 1e-7}}),
        doc(12, t1, {"1": {"person": "1", "objectType": "salarymain", "sizeIncome": 123456789012},
                     "2": {"person": "2", "objectType": "other", "sizeIncome": -5.5}}),
    ]


# expected rows of branch_docs, worked out by hand from the function's rules
EXPECTED_BRANCH = {
    "nacp_test_001": (1000.8, 1001.0, 33.33 + 5 + 7, 33.33 + 12 + 5 + 7),
    "nacp_test_002": (0, 0, 0, 0),
    "nacp_test_003": (0, 0, 0, 0),
    "nacp_test_004": (0, 0, 0, 0),
    "nacp_test_010": (3, 3, 0, 0),
    "nacp_test_011": (0.6, 0.6, 1e-7, 1e-7),
    "nacp_test_012": (123456789012, 123456789012, 0, -5.5),
}


def generated_docs(n: int = 200) -> list[dict]:
    return normalised_declarations(n, 7)


# --------------------------------------------------------------------------- runners


def run_python(source: str, docs: list[dict]) -> list[list]:
    namespace: dict = {}
    exec(compile(source, "map.py", "exec"), namespace)
    funs = [v for k, v in namespace.items() if callable(v) and not k.startswith("__")]
    assert len(funs) == 1, "couchpy needs exactly one function in the source"
    return [[list(r) for r in (funs[0](json.loads(json.dumps(d))) or [])] for d in docs]


JS_SHIM = r"""
const fs = require("fs");
const [src, docs] = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let rows = [];
globalThis.emit = (k, v) => { rows.push([k, v]); };
const fn = eval("(" + src + ")");
const out = docs.map((d) => { rows = []; fn(d); return rows; });
fs.writeFileSync(process.argv[3], JSON.stringify(out));
"""


def run_node(source: str, docs: list[dict], tmp_path: Path) -> list[list]:
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        pytest.skip("node is not installed")
    shim, data, out = tmp_path / "shim.js", tmp_path / "in.json", tmp_path / "out.json"
    shim.write_text(JS_SHIM)
    data.write_text(json.dumps([source, docs], ensure_ascii=False), encoding="utf-8")
    subprocess.run([node, str(shim), str(data), str(out)], check=True, timeout=60)
    return json.loads(out.read_text(encoding="utf-8"))


ESCRIPT = r"""#!/usr/bin/env escript
%% Evaluates a map fun as couch_native_process does (erl_eval, Emit bound) over docs read with
%% file:consult, and writes the rows as JSON (one array per doc; {"error": ...} when the fun crashes).
main([SrcFile, DocsFile, OutFile]) ->
    {ok, Src} = file:read_file(SrcFile),
    {ok, Tokens, _} = erl_scan:string(binary_to_list(Src)),
    {ok, Exprs} = erl_parse:parse_exprs(Tokens),
    Emit = fun(K, V) -> put(rows, [[K, V] | get(rows)]), ok end,
    Log = fun(_) -> ok end,
    Bindings = erl_eval:add_binding('Log', Log, erl_eval:add_binding('Emit', Emit, erl_eval:new_bindings())),
    {value, Fun, _} = erl_eval:exprs(Exprs, Bindings),
    {ok, Docs} = file:consult(DocsFile),
    Out = [begin
               put(rows, []),
               case catch Fun(Doc) of
                   {'EXIT', Reason} -> {[{<<"error">>, list_to_binary(io_lib:format("~0p", [Reason]))}]};
                   _ -> lists:reverse(get(rows))
               end
           end || Doc <- Docs],
    ok = file:write_file(OutFile, enc(Out)).

enc(null) -> <<"null">>;
enc(true) -> <<"true">>;
enc(false) -> <<"false">>;
enc(N) when is_integer(N) -> integer_to_binary(N);
enc(F) when is_float(F) -> list_to_binary(float_to_list(F, [short]));
enc(B) when is_binary(B) -> [$", [esc(C) || <<C>> <= B], $"];
enc({L}) when is_list(L) -> [${, lists:join($,, [[enc(K), $:, enc(V)] || {K, V} <- L]), $}];
enc(L) when is_list(L) -> [$[, lists:join($,, [enc(X) || X <- L]), $]];
enc(A) when is_atom(A) -> enc(atom_to_binary(A)).

esc($") -> <<"\\\"">>;
esc($\\) -> <<"\\\\">>;
esc(C) when C < 32 -> list_to_binary(io_lib:format("\\u~4.16.0b", [C]));
esc(C) -> C.
"""


def to_erlang(value) -> str:
    """A JSON value as an EJSON Erlang term."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mant, exp = text.split("e")
            text = f"{mant}.0e{exp}"
        return text
    if isinstance(value, str):
        # ASCII source with \x{...} escapes, encoded by /utf8: no source-encoding questions
        body = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else f"\\x{{{ord(c):x}}}" for c in value)
        return f'<<"{body}"/utf8>>'
    if isinstance(value, list):
        return "[" + ",".join(to_erlang(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{[" + ",".join("{" + to_erlang(k) + "," + to_erlang(v) + "}" for k, v in value.items()) + "]}"
    raise TypeError(type(value))


def run_erlang(source: str, docs: list[dict], tmp_path: Path) -> list[list]:
    escript = shutil.which("escript")
    if not escript:
        pytest.skip("escript (erlang-nox) is not installed")
    script, src, data, out = (tmp_path / n for n in ("map.escript", "map.erl", "docs.terms", "out.json"))
    script.write_text(ESCRIPT)
    src.write_text(source, encoding="utf-8")
    data.write_text("".join(to_erlang(d) + ".\n" for d in docs))
    subprocess.run([escript, str(script), str(src), str(data), str(out)], check=True, timeout=120)
    return json.loads(out.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- comparison


def normal(value):
    """JSON as CouchDB stores it: JS leaves out undefined members, Python/Erlang write null."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def assert_same(a, b, where: str) -> None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {a} != {b}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} rows != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def source_of(rel: str) -> str:
    return views.load(VIEWS / rel).source


VARIANTS = {
    "map.js": lambda src, docs, tmp: run_node(src, docs, tmp),
    "map.es6.js": lambda src, docs, tmp: run_node(src, docs, tmp),
    "map.erl": lambda src, docs, tmp: run_erlang(src, docs, tmp),
}


@pytest.fixture(scope="module")
def python_rows_branch():
    return run_python(source_of("income/map.py"), branch_docs())


def test_python_variant_matches_hand_worked_rows(python_rows_branch):
    docs = branch_docs()
    got = {d["_id"]: rows for d, rows in zip(docs, python_rows_branch)}
    emitted = {k for k, rows in got.items() if rows}
    assert emitted == set(EXPECTED_BRANCH)
    for _id, (ds, dt, fs, ft) in EXPECTED_BRANCH.items():
        [[key, value]] = got[_id]
        assert key == _id
        assert_same([value["declarant_salary"], value["declarant_total"], value["family_salary"],
                     value["family_total"]], [ds, dt, fs, ft], _id)
    first = got["nacp_test_001"][0][1]
    assert first["FIO"] == "Шевченко Тарас Григорович"
    assert (first["workPost"], first["workPlace"], first["decl_year"]) == ("суддя", "Київський районний суд", "2016")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_matches_python_on_branch_docs(variant, python_rows_branch, tmp_path):
    rows = VARIANTS[variant](source_of(f"income/{variant}"), branch_docs(), tmp_path)
    assert_same(normal(rows), normal(python_rows_branch), variant)


def test_python_variant_is_the_recorded_function():
    recorded = json.loads((FIXTURES / "python" / "ddoc.json").read_text())["views"]["income"]["map"]
    assert source_of("income/map.py") == recorded
    recorded_js = json.loads((FIXTURES / "javascript" / "ddoc.json").read_text())["views"]["income"]["map"]
    assert source_of("income/map.js") == recorded_js
    recorded_erl = json.loads((FIXTURES / "erlang" / "ddoc.json").read_text())["views"]["income"]["map"]
    assert source_of("income/map.erl") == recorded_erl


@pytest.fixture(scope="module")
def gen_docs():
    return generated_docs()


USED_FIELDS = ("_id", "step_0", "step_1", "step_11")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_matches_python_on_generated_docs(variant, gen_docs, tmp_path):
    if variant.endswith(".erl"):
        # file:consult scans ~16 KB of terms per doc slowly; the function reads only these members
        gen_docs = [{k: d[k] for k in USED_FIELDS if k in d} for d in gen_docs]
    expected = run_python(source_of("income/map.py"), gen_docs)
    assert sum(1 for r in expected if r) > len(gen_docs) // 2, "generated docs should mostly emit"
    rows = VARIANTS[variant](source_of(f"income/{variant}"), gen_docs, tmp_path)
    assert_same(normal(rows), normal(expected), variant)


def test_baseline_emits_id_and_null_for_type_1(tmp_path):
    docs = branch_docs()
    rows = run_erlang(source_of("baseline/map.erl"), docs, tmp_path)
    want = [[[d["_id"], None]] if isinstance(d.get("step_0"), dict) and d["step_0"].get("declarationType") == "1"
            else [] for d in docs]
    # doc 9 has a non-object step_0: the recorded baseline crashes on it (CouchDB logs it, emits nothing)
    assert "badmatch" in rows[8]["error"]
    assert rows[:8] + rows[9:] == want[:8] + want[9:]
    assert sum(1 for r in want if r) == 8


# --------------------------------------------------------------------------- loading and languages


@pytest.mark.parametrize("rel,language,dialect", [
    ("income/map.js", "javascript", "es5"),
    ("income/map.es6.js", "javascript", "es2015"),
    ("income/map.py", "python", "python"),
    ("income/map.erl", "erlang", "erlang"),
    ("baseline/map.erl", "erlang", "erlang"),
])
def test_shipped_files_declare_their_language(rel, language, dialect):
    v = views.load(VIEWS / rel)
    assert (v.language, v.dialect, v.detected_from) == (language, dialect, "header")
    assert "dragnet:" not in v.source.splitlines()[0]
    assert views.default_view_name(VIEWS / rel) == rel.split("/")[0]


def test_extension_decides_without_header(tmp_path):
    for name, lang, dialect in [("m.js", "javascript", "es5"), ("m.es6.js", "javascript", "es2015"),
                                ("m.py", "python", "python"), ("m.erl", "erlang", "erlang")]:
        p = tmp_path / name
        p.write_text("function (doc) {}\n")
        v = views.load(p)
        assert (v.language, v.dialect, v.detected_from) == (lang, dialect, "extension")


def test_header_beats_extension_and_option_beats_header(tmp_path):
    p = tmp_path / "fun.txt"
    p.write_text("// dragnet: language=javascript_quickjs\nfunction (doc) { emit(doc._id, null); }\n")
    v = views.load(p)
    assert (v.language, v.detected_from, v.dialect) == ("javascript_quickjs", "header", "es5")
    assert v.source == "function (doc) { emit(doc._id, null); }\n"
    v = views.load(p, language="chakra")
    assert (v.language, v.detected_from) == ("chakra", "option")


@pytest.mark.parametrize("given,expected", [("python3", "python3"), ("pypy3", "pypy3"), ("couchpy", "python"),
                                            ("PyPy", "pypy3")])
def test_python_file_runs_on_every_python_server(given, expected):
    assert views.load(VIEWS / "income/map.py", language=given).language == expected


def test_language_of_another_family_is_refused():
    with pytest.raises(UsageError, match="cannot run on language 'erlang'"):
        views.load(VIEWS / "income/map.js", language="erlang")
    with pytest.raises(UsageError, match="cannot run on language 'javascript'"):
        views.load(VIEWS / "income/map.py", language="javascript")


def test_unknown_language_goes_through_for_couchdb_to_judge():
    v = views.load(VIEWS / "income/map.js", language="cobol")
    assert (v.language, v.known) == ("cobol", False)


def test_bad_files(tmp_path):
    with pytest.raises(UsageError, match="view file not found"):
        views.load(tmp_path / "nope.js")
    p = tmp_path / "map.txt"
    p.write_text("fun\n")
    with pytest.raises(UsageError, match="cannot tell the view's language"):
        views.load(p)
    e = tmp_path / "empty.js"
    e.write_text("// dragnet: language=javascript\n\n")
    with pytest.raises(UsageError, match="holds no function"):
        views.load(e)
    b = tmp_path / "bin.js"
    b.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        views.load(b)


def test_reduce_values(tmp_path):
    assert views.load_reduce("_sum") == "_sum"
    assert views.load_reduce(None) is None
    with pytest.raises(UsageError, match="unknown built-in reduce"):
        views.load_reduce("_median")
    f = tmp_path / "red.js"
    f.write_text("// dragnet: language=javascript\nfunction (k, v, re) { return sum(v); }\n")
    assert views.load_reduce(str(f)) == "function (k, v, re) { return sum(v); }\n"


def test_ddoc_build_keeps_autoupdate_off():
    from dragnet.index import ddoc as ddoc

    v = views.load(VIEWS / "income/map.erl")
    doc = ddoc.build("bench1", "income", v, reduce="_count", autoupdate=False)
    assert doc == {"_id": "_design/bench1", "language": "erlang", "autoupdate": False,
                   "views": {"income": {"map": v.source, "reduce": "_count"}}}
    # a nonce changes the index signature (options), not the function
    doc2 = ddoc.build("bench1", "income", v, autoupdate=False, nonce="n1")
    assert doc2["options"] == {"dragnet_benchmark": "n1"} and doc2["views"]["income"] == {"map": v.source}
    with pytest.raises(UsageError):
        ddoc.ddoc_id("bad name/with slash")
    assert ddoc.unique_name("javascript_quickjs", "income") != ddoc.unique_name("javascript_quickjs", "income")
