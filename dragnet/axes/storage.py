"""The `--storage disk,tmpfs` bench axis: the storage the managed CouchDB keeps its data on.

Outermost in the plan: each value restarts the CouchDB dragnet manages with its data on that storage (and
the bench imports the data again); a CouchDB given by URL is one storage, labelled with --storage-label or
as dragnet recorded it. At the end the CouchDB the bench found goes back to its own storage. Its key in
every run and result is `storage` (the results contract).
"""

from __future__ import annotations

from dragnet.axes.model import Option, PlanAxis
from dragnet.errors import UsageError


# its command-line options (dragnet.cli.options.planned_options builds them), parsed by `parse`
OPTIONS = (
    Option(("--storage",), "storages", "",
           "disk,tmpfs: restart the CouchDB started by `dragnet couch up` with its data on each storage and "
           "repeat the matrix."),
    Option(("--storage-label",), "storage_label", "",
           "Storage to record for a CouchDB dragnet does not manage (default: unknown)."),
)


def parse(text: str | None, label: str | None = None) -> list[str]:
    """--storage's values ('disk,tmpfs'); a one-line UsageError for another storage or with --storage-label."""
    from dragnet.axes.model import parse_list

    st = parse_list(text, "--storage")
    for s in st:
        if s not in ("disk", "tmpfs"):
            raise UsageError(f"--storage {s}: expected disk or tmpfs")
    if st and label:
        raise UsageError("--storage-label is for a CouchDB dragnet does not manage; --storage sets the label")
    return st


class StorageAxis(PlanAxis):
    name = "storage"
    outer = True

    def __init__(self, storages: list[str], label: str | None):
        self.given = list(storages)    # empty: the storage found, no restart
        self.label = label

    def check(self, ctx) -> None:
        from dragnet.couchdb.client import mask_url

        if self.given and ctx.inst is None:
            raise UsageError(f"--storage {','.join(self.given)} needs a CouchDB started by `dragnet couch up` "
                             f"(none recorded for {mask_url(ctx.config.url)}); to label this server's storage "
                             f"use --storage-label")
        if self.given and ctx.inst is not None:
            from dragnet.couchdb import cluster as cluster

            if cluster.recorded(ctx.inst.port, ctx.env) is not None:
                raise UsageError("--storage restarts one CouchDB between storages; on a cluster dragnet started "
                                 "use --storage-label (restart the cluster yourself)")

    def values(self, ctx) -> list[str]:
        if self.given:
            return self.given
        return [self.label or (ctx.inst.storage if ctx.inst is not None else "unknown")]

    def start_on(self, ctx) -> dict:
        return {"storage_kind": (self.given or ["disk"])[0]}

    def manifest(self, ctx) -> dict:
        return {"storages": self.values(ctx)}

    def enter(self, value, ctx) -> None:
        if ctx.inst is None or not self.given or ctx.inst.storage == value:
            return
        ctx.on_event("restart", {"storage": value})
        old = ctx.inst
        ctx.restart_on(value, **ctx.restart_keywords())
        ctx.switcher.restarted(ctx.inst)
        ctx.restarted()
        ctx.drop_tmpfs_data(old)

    def changed(self, ctx, found) -> bool:
        return bool(self.given and found.storage and ctx.inst.storage != found.storage)


def plan_axis(config) -> StorageAxis:
    return StorageAxis(config.storages, config.storage_label)
