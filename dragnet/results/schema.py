"""The results schema: the one reader and writer of dragnet's results files, and typed records of them.

Files carry `"schema": "<name>/<version>"`:

| schema                   | written by                | record here                  |
|--------------------------|---------------------------|------------------------------|
| dragnet.addview/1        | addview, one bench build  | record.Build (Build.of)      |
| dragnet.bench/1          | bench's manifest          | record.Build.of_entry per run|
| dragnet.sizes/1          | bench --sizes             | SizeRow per row              |
| dragnet.qsbench/1        | qsbench                   | QsbenchRun per server run    |
| dragnet.qsbench-ddoc/1   | qsbench --ddoc            | (read, not typed further)    |
| dragnet.forecast/2       | forecast (forecast.json)  | (read, not typed further)    |
| dragnet.compare/1        | compare --json            | (read, not typed further)    |
| dragnet.store/1          | the store's index.json    | its `runs` entries           |
| dragnet.keepup/1         | keepup (keepup.json)      | (read, not typed further)    |

read() refuses a file that is not JSON (naming the file, line and column: a truncated write ends there),
one of another kind, and one from a newer schema version than this dragnet knows (naming that version).
Older files load: every field a later version added is optional (dragnet.forecast/2 added each quantity's
"choice", the shape its held-out sizes chose), and readers fall back to the fields
older files had (e.g. bench.axes -> bench.language, storage, bench.scenario, bench.size).
write() writes atomically (a temporary file renamed), so a reader never sees half a file.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from dragnet.errors import UsageError

ADDVIEW, BENCH, SIZES, QSBENCH, QSBENCH_DDOC = ("dragnet.addview", "dragnet.bench", "dragnet.sizes",
                                                "dragnet.qsbench", "dragnet.qsbench-ddoc")
FORECAST, COMPARE, STORE = "dragnet.forecast", "dragnet.compare", "dragnet.store"
NOUVEAU = "dragnet.nouveau"   # one Nouveau index build (dragnet.index.search_build)
NOUVEAU_BENCH = "dragnet.nouveau-bench"   # the manifest of `bench --nouveau` (dragnet.bench.search_rounds)
NOUVEAU_FORECAST = "dragnet.nouveau-forecast"   # `forecast --nouveau`'s forecast.json (dragnet.forecast.search_sweep)
KEEPUP = "dragnet.keepup"
# the newest version of each schema this dragnet reads and writes
VERSIONS = {ADDVIEW: 1, BENCH: 1, SIZES: 1, QSBENCH: 1, QSBENCH_DDOC: 1, FORECAST: 2, COMPARE: 1, STORE: 1, NOUVEAU: 1,
            NOUVEAU_BENCH: 1, KEEPUP: 1, NOUVEAU_FORECAST: 1}
_SCHEMA = re.compile(r"^(dragnet\.[a-z-]+)/(\d+)$")
# the name of a bench directory's manifest (dragnet.bench/1)
BENCH_MANIFEST = "bench.json"


def schema(name: str) -> str:
    """The schema string this dragnet writes for `name`, e.g. "dragnet.addview/1"."""
    return f"{name}/{VERSIONS[name]}"


class ResultsFileError(UsageError):
    """A results file that cannot be read (bad input: exit 2, as report has always done): which file and why."""


def parse_schema(value: Any) -> tuple[str, int] | None:
    """("dragnet.addview", 1) from "dragnet.addview/1"; None when it is not a dragnet schema string."""
    m = _SCHEMA.match(value) if isinstance(value, str) else None
    return (m.group(1), int(m.group(2))) if m else None


def check_schema(data: Any, path: str | os.PathLike, kinds: Iterable[str]) -> str:
    """The schema name of `data` when it is one of `kinds` at a version this dragnet reads; else an error."""
    kinds = tuple(kinds)
    found = parse_schema(data.get("schema")) if isinstance(data, dict) else None
    if found is None or found[0] not in kinds:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        what = " or ".join(k.removeprefix("dragnet.") for k in kinds)
        raise ResultsFileError(f"{path}: not a dragnet {what} results file (schema {got!r}, expected "
                               f"{' or '.join(repr(schema(k)) for k in kinds)})")
    name, version = found
    if version > VERSIONS[name]:
        raise ResultsFileError(f"{path}: schema '{name}/{version}' is newer than this dragnet reads "
                               f"('{schema(name)}'); upgrade dragnet to read it")
    return name


def read_json(path: str | os.PathLike) -> Any:
    """The JSON in `path`; a corrupt or truncated file is an error naming it and where the JSON breaks."""
    p = Path(path)
    try:
        # results kept as evidence in docs/ may be gzipped
        text = gzip.decompress(p.read_bytes()).decode("utf-8") if p.name.endswith(".gz") else p.read_text(encoding="utf-8")
    except (OSError, EOFError) as exc:
        raise ResultsFileError(f"cannot read results file {p}: {getattr(exc, 'strerror', None) or exc}") from None
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        end = text.rstrip()
        if exc.pos >= len(end) or not end.endswith(("}", "]")):   # a write cut short (results end in } or ])
            raise ResultsFileError(f"{p}: not valid JSON, truncated (the file ends at line {end.count(chr(10)) + 1}; "
                                   f"{exc.msg}: line {exc.lineno} column {exc.colno})") from None
        raise ResultsFileError(f"{p}: not valid JSON, broken at line {exc.lineno} column {exc.colno} "
                               f"({exc.msg})") from None


def kept(path: str | os.PathLike) -> Path:
    """path, or its gzipped twin where only that exists: back-tests keep their summaries gzipped in the repository,
    and every reader (read_json) reads them as they are."""
    p = Path(path)
    gz = p.with_name(p.name + ".gz")
    return gz if not p.is_file() and gz.is_file() else p


def read(path: str | os.PathLike, *kinds: str) -> dict:
    """A results file of one of `kinds` (all kinds when none given), checked (see check_schema)."""
    data = read_json(path)
    check_schema(data, path, kinds or VERSIONS)
    return data


def kind_of(data: Any) -> str | None:
    """The schema name of a loaded document, or None."""
    found = parse_schema(data.get("schema")) if isinstance(data, dict) else None
    return found[0] if found else None


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1, default=str) + "\n"


def write(path: str | os.PathLike, data: Any, text: str | None = None) -> Path:
    """Write `data` (or the already formatted `text`) to `path` atomically; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(dumps(data) if text is None else text, encoding="utf-8")
    tmp.replace(p)
    return p


# ---------------------------------------------------------------- typed records

def number(value: Any) -> float | None:
    """A finite number from a results field (numbers written as text too); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


@dataclass
class SizeRow:
    """One row of a size sweep (dragnet.bench.sizes "rows"): a language in a scenario at one database size."""

    language: str
    scenario: str
    size: int
    runs: int
    seconds: list[float]
    docs_per_sec: list[float]
    db_file: int | None
    index_file: int | None
    peak_memory: int | None
    peak_source: str | None
    exceeds_memory: bool           # this size's database is larger than the scenario's memory limit
    first_exceeding: bool          # … and it is the first size that is


@dataclass
class ShardRun:
    """One process over one slice of the documents."""

    shard: int
    docs: int
    pid: int
    startup_ns: int          # spawn to the answer of reset
    map_ns: int              # first map_doc sent to last answer read (= sum of latencies_ns)
    reduce_ns: int
    latencies_ns: list[int]  # per document, in document order
    cpu_s: float             # user + system of the process (wait4 rusage)
    peak_rss_kb: int | None  # VmHWM just before closing
    log_lines: int
    answers: list[bytes] = field(default_factory=list, repr=False)
    reduction: Any = None
    driver_cpu_s: float | None = None   # qsbench's own thread CPU during the map loop (the harness's share)
    map_cpu_s: float | None = None      # the server's threads on CPU during the map loop (schedstat, ns-exact)
    map_wait_s: float | None = None     # … and waiting on a run queue meanwhile
    driver: str | None = None           # the map loop: "c" (dragnet-qsdriver) or "python" (None in older files)

    @property
    def wall_ns(self) -> int:
        return self.map_ns + self.reduce_ns

    def as_dict(self, latencies: bool = True) -> dict:
        d = {"shard": self.shard, "docs": self.docs, "pid": self.pid, "startup_ns": self.startup_ns,
             "map_ns": self.map_ns, "reduce_ns": self.reduce_ns, "cpu_s": self.cpu_s,
             "peak_rss_kb": self.peak_rss_kb, "log_lines": self.log_lines, "driver_cpu_s": self.driver_cpu_s,
             "map_cpu_s": self.map_cpu_s, "map_wait_s": self.map_wait_s, "driver": self.driver}
        if latencies:
            d["latencies_ns"] = self.latencies_ns
        return d


@dataclass
class QsbenchRun:
    """One run of one server in a qsbench results file (dragnet.qsbench.run "servers"[i]["runs"][j])."""

    index: int
    warmup: bool
    shards: list[ShardRun]
    round: int | None = None    # the interleaved round it ran in (absent in older files: never paired)

    @property
    def docs(self) -> int:
        return sum(s.docs for s in self.shards)

    @property
    def wall_ns(self) -> int:
        """The slowest shard: the index is built when the last shard is."""
        return max(s.wall_ns for s in self.shards)

    @property
    def docs_per_sec(self) -> float:
        return self.docs / (self.wall_ns / 1e9)

    @property
    def cpu_s(self) -> float:
        return sum(s.cpu_s for s in self.shards)

    @property
    def peak_rss_kb(self) -> int | None:
        vals = [s.peak_rss_kb for s in self.shards if s.peak_rss_kb is not None]
        return max(vals) if vals else None

    @property
    def startup_ns(self) -> int:
        return max(s.startup_ns for s in self.shards)

    @property
    def map_cpu_s(self) -> float | None:
        """The servers' CPU over their map loops (None in older files or where /proc has no schedstat)."""
        v = [s.map_cpu_s for s in self.shards]
        return None if None in v or not v else sum(v)

    @property
    def waited_more_than_ran(self) -> bool:
        return any(s.map_wait_s is not None and s.map_cpu_s is not None and s.map_wait_s > s.map_cpu_s
                   for s in self.shards)

    @property
    def harness_share(self) -> float | None:
        """The driver's CPU over the map loops' wall time: in a one-message-at-a-time exchange the server
        waits while the driver works, so this share of the wall time is the harness's, not the server's."""
        cpu = [s.driver_cpu_s for s in self.shards]
        if None in cpu or not self.shards:
            return None
        return sum(cpu) / max(1e-9, sum(s.map_ns for s in self.shards) / 1e9)

    @property
    def latencies_ns(self) -> list[int]:
        out: list[int] = []
        for s in self.shards:
            out.extend(s.latencies_ns)
        return out

    def as_dict(self, latencies: bool = True) -> dict:
        return {"index": self.index, "warmup": self.warmup, "round": self.round, "docs": self.docs,
                "wall_ns": self.wall_ns,
                "docs_per_sec": self.docs_per_sec, "cpu_s": self.cpu_s, "map_cpu_s": self.map_cpu_s,
                "waited_more_than_ran": self.waited_more_than_ran, "peak_rss_kb": self.peak_rss_kb,
                "startup_ns": self.startup_ns, "log_lines": sum(s.log_lines for s in self.shards),
                "shards": [s.as_dict(latencies) for s in self.shards]}

    @classmethod
    def from_dict(cls, d: dict) -> "QsbenchRun":
        return cls(d["index"], d["warmup"], [
            ShardRun(shard=s["shard"], docs=s["docs"], pid=s["pid"], startup_ns=s["startup_ns"], map_ns=s["map_ns"],
                     reduce_ns=s["reduce_ns"], latencies_ns=s.get("latencies_ns", []), cpu_s=s["cpu_s"],
                     peak_rss_kb=s["peak_rss_kb"], log_lines=s["log_lines"], driver_cpu_s=s.get("driver_cpu_s"),
                     map_cpu_s=s.get("map_cpu_s"), map_wait_s=s.get("map_wait_s"), driver=s.get("driver"))
            for s in d["shards"]], d.get("round"))


def qsbench_runs(doc: dict) -> dict[str, list[QsbenchRun]]:
    """Each server's runs (warm-ups included) of a qsbench results document, servers that did not run left out."""
    return {s["name"]: [QsbenchRun.from_dict(r) for r in s["runs"]] for s in doc.get("servers") or []
            if s.get("runs")}


def _version_text(value: Any) -> str | None:
    if isinstance(value, dict):     # {"name": "spidermonkey", "version": "102"} or {"version": "25.2.3", …}
        return " ".join(str(value[k]) for k in ("name", "version") if value.get(k)) or None
    return str(value) if value not in (None, "") else None


def couchdb_versions(result: dict) -> dict[str, str | None]:
    """{"couchdb", "erlang", "javascript_engine"} of the CouchDB a result ran on, from either shape it may
    have recorded: the raw GET / with its `node_versions` (/_node/_local/_versions), or bench's flat
    `couchdb.versions`."""
    c = result.get("couchdb") if isinstance(result, dict) else None
    if not isinstance(c, dict):
        return {"couchdb": None, "erlang": None, "javascript_engine": None}
    raw = c.get("node_versions") if isinstance(c.get("node_versions"), dict) else {}
    flat = c.get("versions") if isinstance(c.get("versions"), dict) else {}
    return {"couchdb": _version_text(c.get("version")) or _version_text(flat.get("couchdb")),
            "erlang": _version_text((raw.get("erlang") or {}).get("version") if isinstance(raw.get("erlang"), dict)
                                    else raw.get("erlang")) or _version_text(raw.get("erlang_version"))
            or _version_text(flat.get("erlang")),
            "javascript_engine": _version_text(raw.get("javascript_engine"))
            or _version_text(flat.get("javascript_engine"))}
