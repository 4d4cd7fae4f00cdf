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


def server_option(f: Callable) -> Callable:
    """--server NAME=COMMAND (or a servers file), repeatable: query servers of the user's
    (dragnet.servers.user), registered before the command runs."""
    return click.option("--server", "server_opts", multiple=True, metavar="NAME=COMMAND|FILE",
                        help="Your own query server: its language in design docs is NAME, its map files "
                             "map.NAME; or a servers file (ini/JSON, as --config). Repeatable. "
                             "See docs/your-server.md.")(f)
