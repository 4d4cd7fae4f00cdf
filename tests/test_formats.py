"""The report's formats are a registry: a made-up format added as one record is a `--format` choice at once,
and renders the same model the built-in ones do; `--json` stays the alias of `--format json` everywhere."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dragnet.cli import main
from dragnet.report import model
from dragnet.report.render import formats
from dragnet.report.tables import DesignGroup

REPO = Path(__file__).resolve().parents[1]
ENGINES = REPO / "docs" / "studies" / "nouveau" / "engines-3.5.0"


def _tsv(rep: model.Report) -> str:
    # columns from the model's fields, numbers as the model holds them
    cols = [f.name for f in dataclasses.fields(DesignGroup) if f.name in ("ddoc", "view", "label", "n")]
    rows = ["\t".join(cols)] + ["\t".join(str(getattr(g, c)) for c in cols) + f"\t{g.docs_per_s.median}"
                                for g in rep.design_groups]
    return "\n".join(rows) + "\n"


@pytest.fixture
def tsv():
    formats.register(formats.Format("tsv", text=_tsv))
    yield
    formats.unregister("tsv")


def test_a_made_up_format_is_one_record_and_a_choice_at_once(tsv):
    r = CliRunner().invoke(main, ["report", str(ENGINES), "--format", "tsv"])
    assert r.exit_code == 0, r.output
    head, *rows = r.stdout.strip().splitlines()
    assert head == "ddoc\tview\tlabel\tn" and len(rows) == 2
    # the same figures the JSON format gives from the same model
    js = json.loads(CliRunner().invoke(main, ["report", str(ENGINES), "--format", "json"]).stdout)
    medians = {g["label"]: g["docs_per_s"]["median"] for g in js["design"]["groups"]}
    assert {row.split("\t")[2]: float(row.split("\t")[4]) for row in rows} == medians


def test_an_unknown_format_is_refused_and_a_built_in_cannot_be_replaced():
    r = CliRunner().invoke(main, ["report", str(ENGINES), "--format", "tsv"])
    assert r.exit_code == 2 and "'tsv' is not one of" in r.output
    with pytest.raises(ValueError, match="built-in"):
        formats.register(formats.Format("csv", text=_tsv))


def test_json_is_the_alias_of_format_json(tmp_path):
    a = CliRunner().invoke(main, ["report", str(ENGINES), "--json"])
    b = CliRunner().invoke(main, ["report", str(ENGINES), "--format", "json"])
    assert a.exit_code == b.exit_code == 0 and json.loads(a.stdout) == json.loads(b.stdout)
    out = tmp_path / "g.jsonl"
    for args in (["--json"], ["--format", "json"]):
        r = CliRunner().invoke(main, ["generate", "-n", "2", "-o", str(out), *args])
        assert r.exit_code == 0 and json.loads(r.stdout)["count"] == 2
    r = CliRunner().invoke(main, ["generate", "-n", "2", "-o", str(out), "--format", "table"])
    assert r.exit_code == 0 and r.stdout.startswith("wrote 2 declarations")


def test_every_command_takes_format():
    import click

    ctx = click.Context(main)
    missing = []
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        subs = {s: cmd.get_command(ctx, s) for s in cmd.list_commands(ctx)} if isinstance(cmd, click.Group) \
            else {name: cmd}
        for sub, c in subs.items():
            if any(p.name == "fmt" or "--json" in getattr(p, "opts", ()) for p in c.params) and \
                    not any("--format" in getattr(p, "opts", ()) for p in c.params):
                missing.append(f"{name} {sub}")
    # servers' --json is one of three print modes (--env, --ini, --json), not a format of one outcome
    assert missing == ["servers servers"], missing
