"""Options and output helpers shared by the subcommands."""

from __future__ import annotations

import json
from typing import Any, Callable

import click

DEFAULT_URL = "http://127.0.0.1:5984"


def url_option(f: Callable) -> Callable:
    return click.option("--url", envvar="DRAGNET_COUCHDB_URL", default=DEFAULT_URL, show_default=True,
                        help="CouchDB URL; credentials from it or from COUCHDB_USER/COUCHDB_PASSWORD "
                             "(env DRAGNET_COUCHDB_URL).")(f)


def db_option(f: Callable) -> Callable:
    return click.option("--db", required=True, help="Database name.")(f)


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")(f)


def print_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str))


def store_option(f):
    return click.option("--store", "store_dir", type=click.Path(file_okay=False), default=None,
                        help="Results store holding named baselines [default: $DRAGNET_STORE or results/store].")(f)


def with_progress(run):
    """run(show) under a progress bar on stderr; show takes a dragnet.data.sample.Progress."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), console=Console(stderr=True),
                  transient=True) as bar:
        tasks: dict = {}

        def show(p) -> None:
            if p.phase not in tasks:
                label = "listing ids" if p.phase == "ids" else "sampling"
                tasks[p.phase] = bar.add_task(label, total=p.total or None, stats="")
            # doc_count may grow while we read: never let the bar run past its end
            bar.update(tasks[p.phase], completed=p.seen, total=max(p.total, p.seen) or None,
                       stats=f"{p.sampled:,} sampled" if p.phase == "copy" else "")
        return run(show)
def server_option(f: Callable) -> Callable:
    """--server NAME=COMMAND (or a servers file), repeatable: query servers of the user's
    (dragnet.servers.user), registered before the command runs."""
    return click.option("--server", "server_opts", multiple=True, metavar="NAME=COMMAND|FILE",
                        help="Your own query server: its language in design docs is NAME, its map files "
                             "map.NAME; or a servers file (ini/JSON, as --config). Repeatable. "
                             "See docs/your-server.md.")(f)


def planned_options(f: Callable) -> Callable:
    """The options of the axes the plan keeps under keys of their own (storage, the scenarios:
    dragnet.axes.kinds.PLANNED_OPTIONS), passed on by dest: a new one is a record there, not an edit here."""
    from dragnet.axes.kinds import PLANNED_OPTIONS

    for o in reversed(PLANNED_OPTIONS):
        f = click.option(*o.flags, o.dest, default=None, metavar=o.metavar or None, help=o.help,
                         multiple=o.multiple)(f)
    return f


def axis_options(f: Callable) -> Callable:
    """Every bench axis kind's options (dragnet.axes.kinds.KINDS), passed on by dest: a new axis is a record
    there, not an edit here."""
    from dragnet.axes.kinds import KINDS

    for kind in reversed(KINDS):
        for o in reversed(kind.options):
            f = click.option(*o.flags, o.dest, default=None, metavar=o.metavar, help=o.help,
                             multiple=o.multiple)(f)
    return f
