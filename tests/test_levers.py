"""dragnet.report.levers: levers by stage and CouchDB version, and commands that the CLI accepts."""

import re
import shlex

import click
import pytest

from dragnet.cli import main
from dragnet.report import levers


def _names(suggestions):
    return [s.lever.name for s in suggestions]


def test_gc_on_3_5_0_suggests_the_upgrade_not_gc_interval_docs_which_3_5_0_does_not_read():
    out = levers.suggest({"gc": 0.5, "unnamed": 0.3}, version="3.5.0", db="d", language="javascript")
    names = _names(out)
    assert "upgrade to CouchDB 3.5.2" in names
    assert "[view_updater] gc_interval_docs" not in names
    up = out[names.index("upgrade to CouchDB 3.5.2")]
    assert up.command == ("dragnet bench --db d --languages javascript --couchdb <3.5.0 install>,<3.5.2 install> "
                          "--repeat 3")


def test_gc_on_3_5_2_offers_gc_interval_docs_and_no_upgrade():
    names = _names(levers.suggest({"gc": 0.5}, version="3.5.2", db="d", language="erlang"))
    assert "[view_updater] gc_interval_docs" in names and "upgrade to CouchDB 3.5.2" not in names


def test_small_stages_get_no_lever_and_each_lever_is_named_once_largest_stage_first():
    out = levers.suggest({"query_server": 0.3, "gc_prompt": 0.4, "write": 0.05}, version="3.5.0", db="d",
                         language="javascript")
    assert out[0].stage == "gc_prompt"
    assert len(_names(out)) == len(set(_names(out)))
    assert not any(s.stage == "write" for s in out)
    assert levers.suggest({"write": 0.09}, version="3.5.0", db="d", language="x") == []


def test_a_version_without_a_catalogue_gets_no_setting_lever():
    names = _names(levers.suggest({"queues": 0.5, "gc": 0.5, "write": 0.2}, version="9.9.9", db="d", language="javascript"))
    assert names and not any(n.startswith("[view_updater]") for n in names)
    assert "upgrade to CouchDB 3.5.2" not in names


def _args(command: str) -> list[str]:
    # the reader's placeholders become values the parser takes
    return shlex.split(re.sub(r"<[^<>]*>", "X", command))


@pytest.mark.parametrize("lever", [lv for lv in levers.LEVERS if lv.command], ids=lambda lv: lv.name)
def test_every_levers_command_parses_as_a_dragnet_command(lever):
    argv = _args(lever.command.format(db="d", language="javascript", engines="javascript,bun", version="3.5.0"))
    assert argv[0] == "dragnet"
    group_ctx = click.Context(main)
    cmd = main.get_command(group_ctx, argv[1])
    cmd.make_context(argv[1], argv[2:], parent=group_ctx)     # an unknown option raises NoSuchOption


def test_the_engine_lever_names_each_engine_once():
    """A build on bun is not told to bench bun twice."""
    for language in ("bun", "javascript"):
        cmds = [s.command for s in levers.suggest({"query_server": 0.5}, version="3.5.2", db="d", language=language)
                if s.lever.name == "the engine"]
        assert len(cmds) == 1
        langs = cmds[0].split("--languages ")[1].split()[0].split(",")
        assert langs[0] == language and len(langs) == len(set(langs))
