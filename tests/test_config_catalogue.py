"""tools/config_catalogue.py: config:get* calls found in Erlang source, with section, key and default."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("config_catalogue", ROOT / "tools" / "config_catalogue.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SRC = '''
-define(SECTION, "disk_monitor").
start() ->
    MaxSize = config:get_integer("view_updater", "queue_memory_cap", 100000),
    Min = config:get("view_updater",
                     "min_writer_items", "100"),   % a comment, with "quotes", and (parens
    All = config:get("admins"),
    T = config:get("fabric", Type ++ "_timeout", Default),
    G = config:get_integer_or_infinity("view_updater", "gc_interval_docs", 1000),
    B = chttpd_util:get_chttpd_config_boolean("enable_cors", false),
    E = config:get_boolean(?SECTION, "enable", false),
    ok.
'''
INI = """
[view_updater]
;queue_item_cap = 500
"""


def test_scan_finds_literal_settings_open_sections_and_wrappers():
    cat = _tool().scan({"src/x/src/x.erl": SRC}, INI)
    got = {(e["section"], e["key"]): e["default"] for e in cat["settings"]}
    assert got == {("view_updater", "queue_memory_cap"): "100000", ("view_updater", "min_writer_items"): "100",
                   ("view_updater", "gc_interval_docs"): "1000", ("disk_monitor", "enable"): "false",
                   ("chttpd", "enable_cors"): "false", ("httpd", "enable_cors"): "false",
                   ("view_updater", "queue_item_cap"): None}
    named = {e["key"]: (bool(e["read_by"]), e["default_ini"]) for e in cat["settings"]}
    assert named["queue_item_cap"] == (False, True) and named["queue_memory_cap"] == (True, False)
    assert set(cat["open_sections"]) == {"admins", "fabric"}
    where = next(e for e in cat["settings"] if e["key"] == "min_writer_items")["read_by"]
    assert where == ["src/x/src/x.erl:5"]


def test_the_shipped_catalogues_name_their_source_and_are_package_data():
    import json

    from dragnet.axes import config as axis_config

    for version in axis_config.catalogued():
        doc = json.loads((axis_config.CATALOGUE_DIR / f"couchdb-{version}.json").read_text())
        assert doc["couchdb"] == version and len(doc["commit"]) == 40 and len(doc["settings"]) > 100
    assert "dragnet.axes = catalogue/*.json" in (ROOT / "setup.cfg").read_text()
