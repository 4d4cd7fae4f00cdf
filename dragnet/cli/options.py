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


class _LiveChoice(click.Choice):
    """A Choice read from a registry each time, so that a format registered after import is accepted."""

    def __init__(self, names: Callable[[], list[str]]):
        self._names = names
        super().__init__(names())

    @property
    def choices(self):
        return tuple(self._names())

    @choices.setter
    def choices(self, value) -> None:
        pass


def format_option(names: Callable[[], list[str]], default: str = "table") -> Callable:
    """`--format NAME` with its choices read from a registry (report/render/formats)."""
    return click.option("--format", "fmt", type=_LiveChoice(names), default=default, show_default=True,
                        help="Output format.")


def _set_json(ctx: click.Context, param: click.Parameter, value) -> None:
    # --json and --format json are one switch: either sets as_json, neither clears what the other set
    ctx.params["as_json"] = bool(ctx.params.get("as_json")) or value in (True, "json")


def db_option_saying(help: str) -> Callable:
    """--db with what it means in that command (a database, or the prefix of a sweep's databases)."""
    return lambda f: click.option("--db", required=True, help=help)(f)


def json_option(f: Callable) -> Callable:
    """`--format table|json` and `--json`, its alias: the command receives as_json."""
    f = click.option("--json", "json_flag", is_flag=True, expose_value=False, callback=_set_json,
                     help="Print the summary as one JSON object (the same as --format json).")(f)
    return click.option("--format", "fmt_json", type=click.Choice(["table", "json"]), default="table",
                        show_default=True, expose_value=False, callback=_set_json, help="Output format.")(f)


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
def sample_count_option(f: Callable) -> Callable:
    return click.option("--sample-count", type=click.IntRange(min=1), default=10000, show_default=True,
                        help="With --data URL/db: how many documents to draw from it (dragnet sample's seeded "
                             "draw, seed 1, cached under cache/).")(f)


def data_file(data: str | None, sample_count: int) -> str | None:
    """--data as the file the command imports: a URL/db is sampled once into cache/ (dragnet sample's draw) and
    that file is given; a file is given as it is."""
    from dragnet.data.sample import cached_sample, is_db_url
    from dragnet.errors import DragnetError

    if not data or not is_db_url(data):
        return data
    try:
        path, _ = with_progress(lambda show: cached_sample(data, count=sample_count, fraction=None, seed=1,
                                                           cache_dir="cache", progress=show))
    except DragnetError as exc:     # the sampler names its own option, --from
        raise type(exc)(str(exc).replace("--from:", "--data:", 1)) from None
    return str(path)


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


def kind_option(kind, help: str | None = None) -> Callable:
    """One axis kind's options as its record gives them (flags, dest, metavar), for a command that varies it
    in its own way (forecast's --cpus: one forecast per value); `help` says that way."""
    def deco(f: Callable) -> Callable:
        for o in reversed(kind.options):
            f = click.option(*o.flags, o.dest, default=None, metavar=o.metavar, help=help or o.help,
                             multiple=o.multiple)(f)
        return f
    return deco


def axis_options(f: Callable) -> Callable:
    """Every bench axis kind's options (dragnet.axes.kinds.KINDS), passed on by dest: a new axis is a record
    there, not an edit here."""
    from dragnet.axes.kinds import KINDS

    for kind in reversed(KINDS):
        for o in reversed(kind.options):
            f = click.option(*o.flags, o.dest, default=None, metavar=o.metavar, help=o.help,
                             multiple=o.multiple)(f)
    return f
