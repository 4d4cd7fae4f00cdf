"""`dragnet generate`: write synthetic NACP-shaped declarations as JSON lines."""

from __future__ import annotations

import time
from pathlib import Path

import click

from dragnet.cli.options import json_option, print_json


@click.command("generate")
@click.option("--count", "-n", type=click.IntRange(min=0), required=True, help="Number of declarations.")
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed, byte-identical output.")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, writable=True),
              help="Output file, JSON lines; a .gz name compresses (reproducibly).")
@click.option("--normalise", is_flag=True,
              help="Write normalised declarations (float amounts, [hidden] markers) instead of raw ones.")
@click.option("--stats", is_flag=True, help="Print the size distribution and declaration-type share.")
@json_option
def generate_cmd(count: int, seed: int, output: str, normalise: bool, stats: bool, as_json: bool) -> None:
    """Write COUNT synthetic declarations shaped like the public NACP asset declarations."""
    from data_prep.generate import generate_file

    from dragnet.measure.stats import mean, percentile

    Path(output).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if count >= 20000 and not as_json:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        with Progress(TextColumn("generating"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                      TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("generate", total=count, rate="")

            def show(n: int) -> None:
                elapsed = time.perf_counter() - started
                bar.update(task, completed=n, rate=f"{n / elapsed:,.0f} docs/s" if elapsed > 0 else "")
            result = generate_file(output, count, seed, normalise=normalise, progress=show)
    else:
        result = generate_file(output, count, seed, normalise=normalise)
    seconds = time.perf_counter() - started
    summary = {"count": result.count, "seed": seed, "output": output, "normalised": normalise,
               "bytes": result.bytes, "seconds": round(seconds, 3),
               "docs_per_sec": round(result.count / seconds, 1) if seconds > 0 else None}
    if stats and result.count:
        sizes = result.sizes
        summary["size"] = {"mean": round(mean(sizes), 1), "median": percentile(sizes, 50),
                           "p90": percentile(sizes, 90), "p99": percentile(sizes, 99), "max": max(sizes),
                           "min": min(sizes)}
        summary["items_per_doc"] = round(result.items / result.count, 2)
        summary["declaration_type_1_share"] = round(result.type1 / result.count, 4)
    if as_json:
        print_json(summary)
        return
    click.echo(f"wrote {result.count:,} declarations ({result.bytes / 1e6:,.1f} MB of JSON) to {output} "
               f"in {seconds:.1f} s ({summary['docs_per_sec'] or 0:,.0f} docs/s)")
    if stats and result.count:
        s = summary["size"]
        click.echo(f"size bytes: mean {s['mean']:,.0f}  median {s['median']:,.0f}  p90 {s['p90']:,.0f}  "
                   f"p99 {s['p99']:,.0f}  max {s['max']:,}")
        click.echo(f"items per doc: {summary['items_per_doc']}   declarationType \"1\": "
                   f"{summary['declaration_type_1_share']:.1%}")
