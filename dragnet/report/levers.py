"""What would shorten a build, as data: for each stage of a profile (dragnet.measure.stages) with a large
share, the levers dragnet knows and the `dragnet bench` command that measures each on its own axes.

A lever on a CouchDB setting is offered only for versions whose code reads that setting (the settings
catalogue of dragnet.axes.config); an upgrade only below the version it would upgrade to. Commands are
templates filled with the build's database, language and CouchDB version; `<...>` is for the reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from dragnet.axes import config as _config
from dragnet.couchdb.client import release

LARGE = 0.10        # a stage with at least this share of the profiled CPU gets its levers named
UPGRADE_TO = "3.5.2"


@dataclass(frozen=True)
class Lever:
    stages: tuple[str, ...]
    name: str
    why: str
    command: str | None           # a `dragnet bench` line, or None where no axis can measure it
    setting: tuple[str, str] | None = None    # (section, key) the version must read
    below: str | None = None      # only for CouchDB versions below this one


LEVERS: tuple[Lever, ...] = (
    Lever(("gc", "gc_prompt"), f"upgrade to CouchDB {UPGRADE_TO}",
          "3.5.2 spaces out the view updater's garbage collections (apache/couchdb#5987)",
          "dragnet bench --db {db} --languages {language} --couchdb <{version} install>,<3.5.2 install> --repeat 3",
          below=UPGRADE_TO),
    Lever(("gc",), "[view_updater] gc_interval_docs",
          "how many documents the updater maps between its own garbage collections (the query server's "
          "per-prompt GC is not spaced by it)",
          "dragnet bench --db {db} --languages {language} --config view_updater/gc_interval_docs=1,100,1000 --repeat 3",
          setting=("view_updater", "gc_interval_docs")),
    Lever(("gc_prompt", "encode", "query_server"), "the engine",
          "an Erlang view has no prompt, no JSON encoding and no per-prompt GC; the ceiling (a null query "
          "server) bounds what any external engine could gain",
          "dragnet bench --db {db} --languages {engines} --repeat auto"),
    Lever(("gc_prompt", "encode"), "batching map_doc",
          "one prompt per document: its round trip and full GC are per document (apache/couchdb#1514); "
          "no CouchDB setting batches it yet, the ceiling's share of the round trip bounds the gain",
          None),
    Lever(("queues", "write"), "[view_updater] queue_memory_cap",
          "the mapper stops when the writer's queue holds this many bytes (100 KB before 3.5.2, 10 MiB since), "
          "so a shard's batches stop growing there and each later batch rewrites its index again: one shard of "
          "12,500 documents with 5 KB of rows took 2.9-3.3x the beam CPU and left a 2.9x larger file at 100 KB than at "
          "10 MiB (docs/studies/forecast-backtests.md, the writer's queue)",
          "dragnet bench --db {db} --languages {language} "
          "--config view_updater/queue_memory_cap=100000,10485760,104857600 --q 1 --repeat 2",
          setting=("view_updater", "queue_memory_cap")),
    Lever(("queues",), "[view_updater] min_writer_items",
          "the writer waits for this many documents' rows before it writes a batch",
          "dragnet bench --db {db} --languages {language} --config view_updater/min_writer_items=100,1000,10000 "
          "--repeat 3",
          setting=("view_updater", "min_writer_items")),
    Lever(("read", "write"), "q (shards)",
          "each shard has its own updater (loader, mapper, writer): more shards build in parallel on more "
          "cores, at a cost per shard",
          "dragnet bench --db {db} --languages {language} --q 2,8 --data <data.jsonl.gz> --repeat 3"),
    Lever(("write",), "the view's collation",
          "raw collation compares keys as Erlang terms instead of through couch_ejson_compare (ICU); rows "
          "then sort differently",
          "dragnet bench --db {db} --ddoc default=<ddoc> --ddoc raw=<ddoc with \"options\": {{\"collation\": \"raw\"}}> "
          "--repeat 3"),
    Lever(("file_io", "read", "write"), "the storage",
          "the data on tmpfs against disk; on small documents the dirty I/O schedulers are mostly busy-waiting, "
          "so little may change",
          "dragnet bench --db {db} --languages {language} --storage disk,tmpfs --repeat 3"),
    Lever(("spin",), "scheduler busy-wait (+sbwt none)",
          "the local release busy-waits for work before sleeping; the docker images turn it off. dragnet has "
          "no vm.args axis: compare the local and docker backends",
          None),
    Lever(("map_fun",), "the map function",
          "in an Erlang view the map function's own code is this stage: rewriting it is the lever",
          "dragnet bench --db {db} --ddoc before=<ddoc> --ddoc after=<ddoc with the map rewritten> --repeat 3"),
)


def applies(lever: Lever, version: str | None) -> bool:
    """Whether the lever exists for this CouchDB version (an unknown version keeps every lever but the
    setting ones, which need a catalogue)."""
    if lever.below is not None:
        have, below = release(version), release(lever.below)
        if have is not None and below is not None and have >= below:
            return False
    if lever.setting is not None:
        keys = _config.catalogue(version)
        if keys is None or not _config.knows(keys, *lever.setting):
            return False
    return True


@dataclass(frozen=True)
class Suggestion:
    stage: str
    share: float
    lever: Lever
    command: str | None


def suggest(shares: Mapping[str, float], *, version: str | None, db: str, language: str,
            large: float = LARGE) -> list[Suggestion]:
    """The levers of every stage whose share is at least `large`, largest stage first; each lever once."""
    out: list[Suggestion] = []
    seen: set[str] = set()
    for stage, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        if share < large:
            continue
        for lever in LEVERS:
            if stage in lever.stages and lever.name not in seen and applies(lever, version):
                seen.add(lever.name)
                engines = ",".join(dict.fromkeys((language, "bun", "ceiling", "erlang")))
                cmd = lever.command.format(db=db, language=language, engines=engines, version=version or "this") \
                    if lever.command else None
                out.append(Suggestion(stage, share, lever, cmd))
    return out
