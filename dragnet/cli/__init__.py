"""The dragnet command line: a click group whose subcommands load on demand.

Each subcommand lives in its own module under dragnet.cli and only parses arguments and prints;
the work is done by library functions in dragnet.*.
"""

from __future__ import annotations

import importlib
import sys

import click

from dragnet import __version__
from dragnet.errors import DragnetError

# name -> "module:attribute"; loaded only when the command runs, so `dragnet --help` stays fast.
COMMANDS: dict[str, str] = {
    "generate": "dragnet.cli.generate:generate_cmd",
    "import": "dragnet.cli.import_:import_cmd",
    "servers": "dragnet.cli.servers:servers_cmd",
    "qsbench": "dragnet.cli.qsbench:qsbench_cmd",
    "couch": "dragnet.cli.couch:couch_cmd",
    "bench": "dragnet.cli.bench:bench_cmd",
    "report": "dragnet.cli.report:report_cmd",
    "addview": "dragnet.cli.addview:addview_cmd",
    "sample": "dragnet.cli.sample:sample_cmd",
    "compare": "dragnet.cli.compare:compare_cmd",
    "history": "dragnet.cli.compare:history_cmd",
    "store": "dragnet.cli.store:store_cmd",
    "forecast": "dragnet.cli.forecast:forecast_cmd",
    "keepup": "dragnet.cli.keepup:keepup_cmd",
    "doctor": "dragnet.cli.doctor:doctor_cmd",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context):
        from dragnet.signals import Terminated, install

        install()
        try:
            return super().invoke(ctx)
        except DragnetError as exc:
            click.echo(f"dragnet: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except Terminated as exc:
            click.echo(f"dragnet: {exc}; cleaned up", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dragnet")
def main() -> None:
    """Measure how fast CouchDB builds views, on which query server, and at what cost."""
