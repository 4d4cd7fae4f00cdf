"""`dragnet doctor`: which parts this machine has, and what each missing one disables."""

from __future__ import annotations

import click

from dragnet.cli.options import json_option, print_json


@click.command("doctor")
@json_option
def doctor_cmd(as_json: bool) -> None:
    """Say which parts this machine has (the CouchDB release, Docker, Java for Nouveau, valgrind, perf, inferno,
    sysstat, each query server), what each missing one disables, and the command or package that adds it.
    Only reads; exits 0 either way.

    Example: dragnet doctor --json"""
    from dragnet.measure.doctor import checkup
    from dragnet.report.render.doctor import lines

    found = checkup()
    if as_json:
        print_json(found.as_dict())
        return
    for line in lines(found):
        click.echo(line)
