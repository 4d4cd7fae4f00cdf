"""`dragnet store`: save a results folder into the results store, list what it holds."""

from __future__ import annotations

import click

from dragnet.cli.options import store_option
from dragnet.cli.options import json_option, print_json


@click.group("store")
def store_cmd() -> None:
    """The results store of named baselines and history (bench --save-baseline writes to it too)."""


@store_cmd.command("save")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--name", required=True, help="Baseline name to save it under.")
@store_option
def save_cmd(folder, name, store_dir):
    """Copy a bench FOLDER (or a folder of rounds) into the store under NAME."""
    from dragnet.results import store as store

    sdir = store.default_dir(store_dir)
    entry = store.save(sdir, folder, name)
    click.echo(f"saved {folder} as baseline {name} in {sdir} ({entry['path']})")


@store_cmd.command("list")
@json_option
@store_option
def list_cmd(as_json, store_dir):
    """The saved runs: date, name, versions, design doc hashes, machine."""
    from dragnet.results import store as store

    sdir = store.default_dir(store_dir)
    runs = store.read_index(sdir)
    if as_json:
        print_json({"store": str(sdir), "runs": runs})
        return
    for r in runs:
        m = r.get("machine") or {}
        click.echo(f"{r['date']}  {r.get('name') or '-':<16} CouchDB {r.get('couchdb')}, OTP {r.get('otp')}, "
                   f"{r.get('engine') or '-'}; ddoc {','.join(r.get('ddoc_hashes') or []) or '-'}; "
                   f"{m.get('hostname')} ({m.get('cpu_count')} CPUs); {len(r.get('cells') or [])} cells")
    click.echo(f"{len(runs)} saved runs in {sdir}")
