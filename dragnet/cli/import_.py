"""`dragnet import`: stream declarations into CouchDB via _bulk_docs."""

from __future__ import annotations

import click

from dragnet.couchdb.client import connect, mask_url
from dragnet.errors import DragnetError
from dragnet.report.render.data_text import import_text
from dragnet.cli.options import db_option_saying, json_option, print_json, url_option


@click.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=True, readable=True))
@url_option
@db_option_saying('The database to import into.')
@click.option("--q", "q", type=click.IntRange(min=1), default=None, help="Shards when creating the database.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None, help="Replicas when creating the database "
              "(at most the cluster's nodes).")
@click.option("--purge", is_flag=True, help="Delete and recreate the database first.")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=4, show_default=True,
              help="Concurrent _bulk_docs requests.")
@click.option("--batch-size", type=click.IntRange(min=1), default=500, show_default=True,
              help="Documents per _bulk_docs request at most.")
@click.option("--max-batch-bytes", type=click.IntRange(min=1024), default=4 * 1024 * 1024, show_default=True,
              help="Bytes per _bulk_docs request at most (a larger single document travels alone).")
@click.option("--normalise", is_flag=True, help="Normalise declarations (data_prep.normalise) before loading.")
@click.option("--rejects", "rejects_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Where rejected records go, as JSON lines [default: rejects-<db>.jsonl].")
@json_option
def import_cmd(path: str, url: str, db: str, q: int | None, n: int | None, purge: bool, concurrency: int, batch_size: int,
               max_batch_bytes: int, normalise: bool, rejects_path: str | None, as_json: bool) -> None:
    """Load PATH (JSON lines, optionally .gz; a JSON array file; or a directory of *.json declarations)
    into database DB. Every record is accounted for: read = imported + existing + rejected; the exit
    status is 1 when anything was rejected."""
    from data_prep.nacp import Source

    from dragnet.data.importer import ImportAborted, ImportOptions, import_documents

    if rejects_path is None:
        rejects_path = f"rejects-{db.replace('/', '_')}.jsonl"
    try:
        source = Source(path)
    except OSError as exc:
        raise DragnetError(f"cannot read {path}: {exc}") from None
    couch = connect(url)
    options = ImportOptions(q=q, n=n, purge=purge, concurrency=concurrency, batch_size=batch_size,
                            max_batch_bytes=max_batch_bytes, normalise=normalise, rejects_path=rejects_path)
    try:
        if as_json:
            summary = import_documents(couch, db, source, options)
        else:
            summary = _with_progress(couch, db, source, options, import_documents)
    except ImportAborted as exc:
        if as_json:
            print_json(dict(exc.summary.as_dict(), error=str(exc)))
        raise
    if as_json:
        print_json(summary.as_dict())
    else:
        click.echo(f"{mask_url(url)}/{db}: {import_text(summary)}")
        if summary.reasons:
            click.echo("rejected: " + ", ".join(f"{k} {v:,}" for k, v in sorted(summary.reasons.items())))
    if summary.rejected:
        raise SystemExit(1)


def _with_progress(couch, db, source, options, run):
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    with Progress(TextColumn("importing"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[stats]}"),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("import", total=source.total or None, stats="")

        def show(p) -> None:
            rate = p.read / p.seconds if p.seconds > 0 else 0.0
            bar.update(task, completed=p.position, stats=(
                f"{p.read:,} read, {p.imported:,} new, {p.existing:,} existing, {p.rejected:,} rejected  "
                f"{rate:,.0f} docs/s  {p.bytes / p.seconds / 1e6 if p.seconds > 0 else 0:,.1f} MB/s"))
        return run(couch, db, source, options, progress=show)
