"""`dragnet keepup`: the write rate each engine's index keeps up with, with and without update=true readers."""

from __future__ import annotations

import click

from dragnet.cli.options import db_option_saying, json_option, print_json, url_option


@click.command("keepup")
@url_option
@db_option_saying('The database the index is built on (--data is imported into it first).')
@click.option("--data", type=click.Path(dir_okay=False, exists=True), default=None,
              help="JSON-lines data imported into --db first (once: its marker is kept).")
@click.option("--q", "q", type=click.IntRange(min=1), default=None, help="Shards when --data creates the database.")
@click.option("--languages", default="javascript,javascript_quickjs", show_default=True,
              help="Comma-separated engines, each with its own design document.")
@click.option("--views", type=click.Path(file_okay=False), default=None,
              help="Folder with the view in every language [default: views/income].")
@click.option("--rates", "rates_text", default="25,50,100,200,400", show_default=True, metavar="N,N,...",
              help="Write rates to step through (documents/s), rising; stops at the first not kept up with.")
@click.option("--window", "window_s", type=click.FloatRange(min=1), default=30.0, show_default=True,
              help="Seconds each rate is written and the lag sampled.")
@click.option("--readers", "readers_text", default="none,2/s", show_default=True,
              help="Reader modes, each stepped on its own: none (ken, CouchDB's background indexer, alone) or a "
                   "rate of readers querying the view with update=true.")
@click.option("--results", "results_dir", type=click.Path(file_okay=False), default=None,
              help="Results folder [default: results/keepup-<UTC time>].")
@json_option
def keepup_cmd(url, db, data, q, languages, views, rates_text, window_s, readers_text, results_dir, as_json):
    """After a full build of each engine's view, write at rising rates and sample the index's lag (the
    database's update sequence against the view's): the highest rate whose lag stays bounded over a window,
    as "keeps up to N docs/s" with the rates tried."""
    from dragnet.bench.keepup import KeepupConfig, parse_readers, run
    from dragnet.load.lag import parse_rates
    from dragnet.report.load import keepup_lines

    cfg = KeepupConfig(url=url, db=db, languages=[x.strip() for x in languages.split(",") if x.strip()],
                       rates=parse_rates(rates_text), views=views, window_s=window_s,
                       readers=parse_readers(readers_text), results_dir=results_dir, data=data, q=q)

    def show(kind: str, d: dict) -> None:
        if as_json:
            return
        if kind == "build":
            click.echo(f"{d['engine']}: full build …", err=True)
        elif kind == "stepped":
            mark = {True: "kept up", False: "did not keep up", None: "undecided"}[d["kept_up"]]
            click.echo(f"  {d['engine']} readers {d['readers']} at {d['rate']:g}/s: {mark} ({d['why']})", err=True)
        elif kind in ("warning", "import"):
            click.echo(f"  {d['message']}", err=True)

    res = run(cfg, on_event=show)
    if as_json:
        print_json(res)
        return
    click.echo("\n".join(keepup_lines(res)))
    click.echo(f"results: {res['file']}")
