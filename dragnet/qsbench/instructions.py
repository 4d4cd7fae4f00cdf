"""Instructions a query server executes per document, counted by valgrind: a figure the machine's load
does not move (I/O: runs query-server processes under valgrind).

CPU time per document moves with whatever else runs on the machine (caches, the core's sibling, the host's
other guests): on this shared machine a design doc's revision measured against itself moves 3-12% per
build, too much for a gate to pass a rename in a few rounds. The instructions a query server executes on the
same documents do not depend on the machine's state, so a count taken in every round of `bench --gate
--metric instructions` differs between counts by tenths of a percent (threads and the JIT's timing: 150
documents counted six times moved 0.16% at load 5 and 0.41% beside 8 busy loops), as iai and cachegrind-based
CI benchmarks use it.

A measurement is two processes of the language's query server on this machine, each under
`valgrind --tool=cachegrind --cache-sim=no` (counting only; ~20-50x slower than native): one gets what
CouchDB 3.5 sends a shard's indexer before the first document (`reset`, `add_lib`, one `add_fun` per
distinct map function), the other the same, then one `map_doc` per document of a fixed sample of the
database, then every `reduce` and `rereduce` CouchDB 3.5 sends while it writes the sample's view B-trees
(dragnet.index.reduce_batches; JavaScript and Python reduces: the built-in `_sum`, `_count`, `_stats` run in
Erlang). The difference, over the sample, is what the query server runs for the views per document: maps,
reduces and rereduces, start-up and compile of the map functions left out (the first process runs once per
revision and server in a process: its count repeats to a few thousand instructions in 2e8). The whole count
repeats to tenths of a percent, so a process counts each revision once per sample and server and
later rounds reuse it (recorded as `reused`): a gate's rounds cost builds, not valgrind runs. CouchDB's
updater writes in batches and rewrites nodes, so a real build makes more reduce calls than the one tree
modelled here: the count sees a reduce's cost, not all of it. The sample is 500 documents: a change that
costs only in documents rarer than about one in 500 can be missed. It sees the query server's side only:
not CouchDB's work per document (the gate judges that on CPU), not waits, not what an instruction costs
(cache misses, the JIT's threads' timing).

A reduce that throws does not fail a build: couchjs logs "function raised exception" and stores null
(share/server/views.js, runReduce). `check_reduces` runs the sample's reduces in a plain process before the
gate judges anything, so such a revision is bad input, not a pass.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterator, Sequence

from dragnet.index.design import Design
from dragnet.couchdb.client import Couch, db_path
from dragnet.data import sample as sampling
from dragnet.errors import UsageError
from dragnet.index.reduce_batches import Call, btree_rows, plan_and_reduce
from dragnet.qsbench import run as qsbench
from dragnet.qsbench.ddoc import MapGroup, group_rows, load_design, map_groups, start_design
from dragnet.results.record import instructions_per_1000_docs
from dragnet.servers.available import discover
from dragnet.servers.discovery import ServerSpec
from dragnet.servers.protocol import ProtocolError, QueryServerProcess

VALGRIND_OPTIONS = ("--tool=cachegrind", "--cache-sim=no")
SAMPLE_DOCS = 500       # documents counted per measurement: the same ones in every round and revision
SAMPLE_SEED = 1
SAMPLE_BYTES = 4 * 1024 * 1024   # ... and at most this much JSON past the first MIN_DOCS
MIN_DOCS = 100
TIMEOUT_S = 600.0       # one answer under valgrind (the first one includes the server's start-up)
_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.M)
# a log line during a reduce: couchjs's "function raised exception ..." (and our servers' like it)
_THROWN = re.compile(r"exception|error", re.I)
# start-up counts by (server command, library, map functions): they repeat to a few thousand instructions
# in ~2e8, so a process counts them once per revision and server and every later count reuses the number
_STARTS: dict[tuple, int] = {}
# whole counts by (server command, design document, sample): they repeat to tenths of a percent,
# so a process counts a revision once on a sample and later rounds reuse it (a gate's rounds then cost
# builds, not valgrind runs)
_COUNTS: dict[tuple, "Count"] = {}


@dataclass
class Count:
    """One measurement: instructions with the documents and without them (start-up and compile)."""

    server: str
    argv: list[str]
    docs: int
    ir_with_docs: int
    ir_start: int
    valgrind: str = ""
    start_reused: bool = False    # ir_start counted by an earlier measurement of the same revision
    reused: bool = False          # the whole count is an earlier measurement's (same revision, sample, server)
    reduce_calls: int = 0         # reduce and rereduce messages counted with the documents

    @property
    def per_1000_docs(self) -> float | None:
        return instructions_per_1000_docs(self.ir_with_docs, self.ir_start, self.docs)

    def as_dict(self) -> dict:
        return {"server": self.server, "argv": self.argv, "docs": self.docs, "ir_with_docs": self.ir_with_docs,
                "ir_start": self.ir_start, "per_1000_docs": self.per_1000_docs, "valgrind": self.valgrind,
                "tool": " ".join(VALGRIND_OPTIONS), "sample_seed": SAMPLE_SEED, "start_reused": self.start_reused, "reused": self.reused,
                "reduce_calls": self.reduce_calls, "counts": "maps, reduces and rereduces"}


# -- pure ----------------------------------------------------------------------------------------

def parse_summary(text: bytes) -> int:
    """The total `Ir` of a cachegrind output file (its `summary:` line)."""
    m = _SUMMARY.search(text)
    if not m:
        raise ValueError("no summary line in cachegrind's output")
    return int(m.group(1))


# -- what runs where -----------------------------------------------------------------------------

def valgrind() -> str | None:
    return shutil.which("valgrind")


class NoQueryServer(UsageError):
    """No query server on this machine runs the language (server_for); callers that can go on without one
    catch this, not the message."""


def server_for(language: str, env: dict | None = None) -> ServerSpec:
    """The query server on this machine that runs `language` (its first one: CouchDB's own where the
    release is found), or a one-line NoQueryServer saying why there is none."""
    specs, skipped = discover(env)
    spec = next((s for s in specs if s.language == language and qsbench.reads_documents(s)), None)
    if spec is None:
        why = "; ".join(f"{k.name}: {k.reason}" for k in skipped if k.name == language or language in k.name)
        raise NoQueryServer(f"--metric instructions: no query server for {language} on this machine"
                         + (f" ({why})" if why else "") + "; it counts the map functions in one here "
                         "(--metric qs decides on the CouchDB's own query servers' CPU instead)")
    return spec


def check(languages: Sequence[str], env: dict | None = None) -> ServerSpec:
    """Before anything runs: valgrind and a local server of the one language."""
    if valgrind() is None:
        raise UsageError("--metric instructions (the gate's default) needs valgrind on PATH (Debian: apt-get "
                         "install valgrind); --metric qs decides on the query servers' CPU instead")
    if len(languages) != 1:
        raise UsageError("--metric instructions: give one language (--languages)")
    return server_for(languages[0], env)


@functools.lru_cache(maxsize=1)
def valgrind_version() -> str:
    try:
        return subprocess.run([valgrind() or "valgrind", "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# -- the documents ---------------------------------------------------------------------------------

def _ids(couch: Couch, db: str) -> Iterator[str]:
    for page in sampling.all_docs_pages(couch, db, include_docs=False):
        for row in page:
            if not row["id"].startswith("_design/"):
                yield row["id"]


def sample_docs(couch: Couch, db: str, count: int = SAMPLE_DOCS, seed: int = SAMPLE_SEED,
                max_bytes: int = SAMPLE_BYTES) -> qsbench.DocSet:
    """A seeded sample of the database's documents, as CouchDB sends them to map_doc (with _id and _rev):
    data.sample's scores, lowest first, so the sample is spread over the id space and the same every time;
    at most `count` documents and, past the first MIN_DOCS, `max_bytes` of them (large documents make
    valgrind's count slow, not steadier)."""
    ids = sorted(_ids(couch, db), key=lambda i: sampling.score(i, seed))[:count]
    docs = []
    for start in range(0, len(ids), sampling.PAGE_SIZE):
        keys = ids[start:start + sampling.PAGE_SIZE]
        rows = couch.post(f"{db_path(db)}/_all_docs", {"keys": keys}, params={"include_docs": "true"})["rows"]
        docs += [r["doc"] for r in rows if r.get("doc")]
    got = qsbench.prepare_docs(docs, origin={"db": db, "seed": seed}, where=db)
    n = next((i for i, total in enumerate(accumulate(got.sizes)) if i >= MIN_DOCS and total > max_bytes), len(got))
    return qsbench.DocSet(got.ids[:n], got.lines[:n], got.sizes[:n], origin={**got.origin, "sample": n})


# -- counting (I/O) --------------------------------------------------------------------------------

class ReduceThrows(UsageError):
    """A reduce or rereduce function threw (or the server answered an error) on the sample: bad input."""

    def __init__(self, view: str, message: str):
        super().__init__(f"view {view}'s reduce throws on the sample: {message}")
        self.view = view


def run_reduces(qs: QueryServerProcess, groups: Sequence[MapGroup], answers: Sequence[bytes],
                ids: Sequence[str]) -> int:
    """Every reduce and rereduce CouchDB 3.5 sends while it writes the documents' view B-trees, in the
    process that mapped them (`answers`: its map_doc answers); ReduceThrows naming the view when one throws.
    Returns the calls made."""
    made = 0
    for group, rows in zip(groups, group_rows(answers, ids, len(groups), qs.name)):
        if not group.os_reduces:
            continue
        views = [v for v, _ in group.reduces]

        def send(call: Call) -> list:
            named = ", ".join(views[i] for i in call.functions)
            qs.logs.clear()
            try:
                answer = qs.prompt(call.message)
            except ProtocolError as exc:
                raise ReduceThrows(named, str(exc)) from None
            thrown = next((m for m in qs.logs if _THROWN.search(m)), None)
            if thrown is not None:
                raise ReduceThrows(named, thrown[:200])
            if not (isinstance(answer, list) and len(answer) == 2 and answer[0] is True
                    and isinstance(answer[1], list) and len(answer[1]) == len(call.functions)):
                raise ReduceThrows(named, f"{call.kind} answered {json.dumps(answer)[:200]}")
            return answer[1]

        _, calls = plan_and_reduce(btree_rows(rows), [s for _, s in group.reduces], send)
        made += len(calls)
    return made


def check_reduces(spec: ServerSpec, design: Design, docs: qsbench.DocSet, timeout: float = 60.0) -> int:
    """The design document's maps and reduces over the documents in one plain process (no valgrind):
    ReduceThrows if a reduce throws; the reduce calls made otherwise."""
    groups = map_groups(design)
    if not any(g.os_reduces for g in groups):
        return 0
    qs, _ = start_design(spec, (design.doc.get("views") or {}).get("lib"), groups, timeout)
    try:
        answers = [qs.prompt_raw(line) for line in docs.lines]
        return run_reduces(qs, groups, answers, docs.ids)
    finally:
        qs.kill()
        qs.close()


def _one(spec: ServerSpec, lib: Any, groups: Sequence[MapGroup], docs: qsbench.DocSet | None,
         out: Path) -> tuple[int, int]:
    """One process under valgrind: start-up, then (with docs) maps, reduces and rereduces; its count and
    the reduce calls made."""
    argv = (valgrind() or "valgrind", *VALGRIND_OPTIONS, f"--cachegrind-out-file={out}", "--", *spec.argv)
    qs, _ = start_design(dataclasses.replace(spec, argv=argv), lib, groups, TIMEOUT_S)
    made = 0
    try:
        answers = []
        for n, line in enumerate(docs.lines if docs else (), 1):
            answer = qs.prompt_raw(line)
            if answer[:1] != b"[" or answer.startswith(b'["error"'):
                raise ProtocolError(f"{spec.name} under valgrind answered {answer[:200]!r} to document {n}",
                                    spec.name)
            answers.append(answer)
        if docs and any(g.os_reduces for g in groups):
            made = run_reduces(qs, groups, answers, docs.ids)
    except BaseException:
        qs.kill()
        qs.close()
        raise
    stats = qs.close(timeout=TIMEOUT_S)   # valgrind writes its counts as the server exits
    if stats.returncode not in (0, None) or not out.exists():
        raise ProtocolError(f"{spec.name} under valgrind exited with {stats.returncode} and left no counts",
                            spec.name)
    return parse_summary(out.read_bytes()), made


CACHE_ENV = "DRAGNET_INSTRUCTIONS_CACHE"   # a folder: counts kept across processes (opt-in)


def _files_digest(argv: Sequence[str]) -> str:
    """The content of the server's executable and of every file its command names: a count is only reused
    for the same programs."""
    h = hashlib.sha256()
    for i, arg in enumerate(argv):
        path = shutil.which(arg) if i == 0 else arg
        if path and Path(path).is_file():
            h.update(Path(path).read_bytes())
    return h.hexdigest()


def cache_key(spec: ServerSpec, design: Design, docs: qsbench.DocSet) -> str:
    """Everything a count depends on: valgrind, the server's command, environment and files, the design
    document, the documents."""
    parts = [valgrind_version(), json.dumps([list(spec.argv), [list(e) for e in spec.env]]), _files_digest(spec.argv),
             json.dumps(design.doc, sort_keys=True), hashlib.sha256(b"".join(docs.lines)).hexdigest()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _cached(folder: str | None, key: str) -> Count | None:
    path = Path(folder) / f"{key}.json" if folder else None
    if path is None or not path.is_file():
        return None
    try:
        d = json.loads(path.read_text())
        return Count(server=d["server"], argv=d["argv"], docs=d["docs"], ir_with_docs=d["ir_with_docs"],
                     ir_start=d["ir_start"], valgrind=d["valgrind"], reduce_calls=d.get("reduce_calls", 0),
                     reused=True)
    except (ValueError, KeyError, TypeError):
        return None       # a damaged entry is counted again


def count(spec: ServerSpec, design: Design, docs: qsbench.DocSet, env: dict | None = None) -> Count:
    """What the query server runs for the design document's views over the documents: maps, reduces and
    rereduces, counted (two processes, see the module). With DRAGNET_INSTRUCTIONS_CACHE set (in `env`, else
    os.environ) to a folder, a count made by an earlier process for the same key (cache_key) is reused."""
    folder = (os.environ if env is None else env).get(CACHE_ENV)
    whole = cache_key(spec, design, docs)
    if whole in _COUNTS:
        return dataclasses.replace(_COUNTS[whole], reused=True)
    hit = _cached(folder, whole)
    if hit is not None:
        _COUNTS[whole] = hit
        return hit
    groups = map_groups(design)
    lib = (design.doc.get("views") or {}).get("lib")
    key = (spec.argv, spec.env, json.dumps(lib, sort_keys=True), tuple(g.map_source for g in groups))
    reused = key in _STARTS
    with tempfile.TemporaryDirectory(prefix="dragnet-instructions-") as tmp:
        if not reused:
            _STARTS[key] = _one(spec, lib, groups, None, Path(tmp) / "start.out")[0]
        total, made = _one(spec, lib, groups, docs, Path(tmp) / "docs.out")
    _COUNTS[whole] = Count(server=spec.name, argv=list(spec.argv), docs=len(docs), ir_with_docs=total,
                           ir_start=_STARTS[key], valgrind=valgrind_version(), start_reused=reused, reduce_calls=made)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        tmp_path = Path(folder) / f".{whole}.{os.getpid()}"
        tmp_path.write_text(json.dumps(_COUNTS[whole].as_dict()))
        tmp_path.replace(Path(folder) / f"{whole}.json")
    return _COUNTS[whole]


def starter(language: str, lib: dict | None, groups: Sequence[MapGroup], timeout: float, env: dict | None,
            container: str | None = None):
    """(a callable starting a server of the language with the design loaded (load_design), the server's name,
    what a record says of where it ran). The server is this machine's, or with `container` (a CouchDB's
    container, by name or id) that container's own, as its CouchDB would start it, by a Docker exec: its query
    server may be another build than this machine's. A language with no server raises NoQueryServer."""
    if container is None:
        spec = server_for(language, env)
        return (lambda: start_design(spec, lib, groups, timeout)[0]), spec.name, {}
    from dragnet.couchdb import container_qs as cq
    from dragnet.couchdb import docker as dk
    from dragnet.errors import DragnetError

    c = dk.client(env)
    try:
        box = c.containers.get(container)
    except Exception as exc:      # noqa: BLE001 - the engine's NotFound or APIError, in one line
        raise DragnetError(f"the CouchDB's container {container}: {str(exc).splitlines()[0][:200]}") from None
    argv = cq.command_for(box.attrs, language)
    if argv is None:
        raise NoQueryServer(f"no {language} query server in the CouchDB's container {box.name} "
                            f"(no {cq.ENV_PREFIX}{language.upper()} in its environment)")

    def start():
        qs = cq.ContainerQueryServer(c.api, box.id, argv, name=language, timeout=timeout)
        load_design(qs, lib, groups)
        return qs

    return start, os.path.basename(argv[0]), {"container": box.name, "argv": argv}
