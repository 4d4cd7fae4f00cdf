"""`dragnet sample`: copy a representative sample of a database to another database or a .jsonl.gz file."""

from __future__ import annotations

import click

from dragnet.couchdb.client import connect, mask_url
from dragnet.errors import UsageError
from dragnet.report.render.data_text import sample_text
from dragnet.cli.options import json_option, print_json, with_progress


@click.command("sample")
@click.option("--from", "source", required=True, metavar="URL/db",
              help="Source database, e.g. http://host:5984/db; credentials from the URL or "
                   "COUCHDB_USER/COUCHDB_PASSWORD.")
@click.option("--to", "target", required=True, metavar="URL/db|FILE.jsonl.gz",
              help="A database (written through _bulk_docs with new_edits:false, _id and _rev kept, so a re-run "
                   "resumes) or a gzip'd JSON lines file (without _rev, for `import` and `qsbench --docs`).")
@click.option("--count", type=click.IntRange(min=1), default=None,
              help="Exactly N documents: those with the N lowest hashes (reads the ids once more first).")
@click.option("--fraction", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="Each document whose hash falls below F (about F of them).")
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed, same sample.")
@json_option
def sample_cmd(source: str, target: str, count: int | None, fraction: float | None, seed: int,
               as_json: bool) -> None:
    """Copy a representative sample of a database. Each document's draw is sha1("<seed>:<_id>") read as a
    number in [0, 1): it does not depend on where the id sorts, so the sample spreads over the whole id
    space (not its first N ids), and the same seed draws the same documents. Design and deleted documents
    are excluded; attachments are left out and counted. Memory stays flat; the whole source is read to
    report its size distribution (mean, percentiles, max, bytes) next to the sample's."""
    from dragnet.data.sample import draw_sample, is_db_url, split_db_url

    if (count is None) == (fraction is None):
        raise UsageError("give --count N or --fraction F (one of them)")
    if not is_db_url(source):
        raise UsageError(f"--from {mask_url(source)}: expected URL/db, e.g. http://127.0.0.1:5984/db")
    src_url, src_db = split_db_url(source)
    kwargs: dict = {}
    if is_db_url(target):
        dst_url, dst_db = split_db_url(target)
        kwargs.update(to_couch=connect(dst_url), to_db=dst_db, target_label=mask_url(target))
    elif target.endswith(".gz"):
        kwargs.update(to_file=target, target_label=target)
    else:
        raise UsageError(f"--to {target}: expected URL/db or FILE.jsonl.gz")
    couch = connect(src_url)
    kwargs.update(count=count, fraction=fraction, seed=seed, source_label=mask_url(source))
    if as_json:
        print_json(draw_sample(couch, src_db, **kwargs).as_dict())
        return
    summary = with_progress(lambda show: draw_sample(couch, src_db, progress=show, **kwargs))
    click.echo(f"{summary.source} -> {summary.target}")
    click.echo(sample_text(summary))


