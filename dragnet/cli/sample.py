"""`dragnet sample`: copy a representative sample of a database to another database or a .jsonl.gz file."""

from __future__ import annotations

import click

from ..couch import connect, mask_url
from .options import json_option, print_json


@click.command("sample")
@click.option("--from", "source", required=True, help="Source database, URL/db (credentials as for --url).")
@click.option("--to", "target", required=True, help="Target: URL/db (written with new_edits:false, resumable) "
                                                   "or FILE.jsonl.gz.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Exactly N documents (bottom-N of the hash).")
@click.option("--fraction", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="Each document with probability F (hash of seed and id below F).")
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed, same sample.")
@json_option
def sample_cmd(source: str, target: str, count: int | None, fraction: float | None, seed: int,
               as_json: bool) -> None:
    """Copy a sample of a database, drawn by a seeded hash of each _id, so it spreads over the whole id space.
    Design and deleted documents are excluded; attachments are left out and counted. Prints the sample's
    size distribution next to the source's."""
    from ..sample import draw_sample, is_db_url, split_db_url

    src_url, src_db = split_db_url(source)
    couch = connect(src_url)
    kwargs: dict = {}
    if is_db_url(target):
        dst_url, dst_db = split_db_url(target)
        kwargs.update(to_couch=connect(dst_url), to_db=dst_db, target_label=mask_url(target))
    else:
        kwargs.update(to_file=target, target_label=target)
    kwargs.update(count=count, fraction=fraction, seed=seed, source_label=mask_url(source))
    if as_json:
        summary = draw_sample(couch, src_db, **kwargs)
        print_json(summary.as_dict())
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("sampling"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[stats]}"),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("sample", total=None, stats="")

        def show(p) -> None:
            bar.update(task, completed=p.seen, total=p.total or None, stats=f"{p.sampled:,} sampled")
        summary = draw_sample(couch, src_db, progress=show, **kwargs)
    click.echo(f"{summary.source} -> {summary.target}")
    click.echo(summary.format())
