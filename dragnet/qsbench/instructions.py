"""Instructions a query server executes per document, counted by valgrind: a figure the machine's load
does not move (I/O: runs query-server processes under valgrind).

CPU time per document moves with whatever else runs on the machine (caches, the core's sibling, the host's
other guests): on this shared machine a design doc's revision measured against itself moves 3-12% per
build, too much for a gate to pass a rename in a few rounds. The instructions a map function executes on the
same documents do not depend on the machine's state, so a count taken in every round of `bench --gate
--metric instructions` differs between the rounds by a few hundredths of a percent (threads and the JIT's
timing), as iai and cachegrind-based CI benchmarks use it.

A measurement is two processes of the language's query server on this machine, each under
`valgrind --tool=cachegrind --cache-sim=no` (counting only; ~20-50x slower than native): one gets what
CouchDB 3.5 sends a shard's indexer before the first document (`reset`, `add_lib`, one `add_fun` per
distinct map function), the other the same and then one `map_doc` per document of a fixed sample of the
database. The difference, over the sample, is the map functions' cost per document, their start-up and
compile left out (the first process runs once per revision and server in a process: its count repeats to
a few thousand instructions in 2e8). The sample is 500 documents: a change that costs only in documents
rarer than about one in 500 can be missed. It sees the query server's side only: not CouchDB's work per document, not waits, not
what an instruction costs (cache misses, the JIT's threads' timing).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterator, Sequence

from dragnet.build.design import Design
from dragnet.couchdb.client import Couch, db_path
from dragnet.data import sample as sampling
from dragnet.errors import UsageError
from dragnet.qsbench import run as qsbench
from dragnet.qsbench.ddoc import MapGroup, map_groups, start_design
from dragnet.results.record import instructions_per_1000_docs
from dragnet.servers.available import discover
from dragnet.servers.discovery import ServerSpec
from dragnet.servers.protocol import ProtocolError

VALGRIND_OPTIONS = ("--tool=cachegrind", "--cache-sim=no")
SAMPLE_DOCS = 500       # documents counted per measurement: the same ones in every round and revision
SAMPLE_SEED = 1
SAMPLE_BYTES = 4 * 1024 * 1024   # ... and at most this much JSON past the first MIN_DOCS
MIN_DOCS = 100
TIMEOUT_S = 600.0       # one answer under valgrind (the first one includes the server's start-up)
_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.M)
# start-up counts by (server command, library, map functions): they repeat to a few thousand instructions
# in ~2e8, so a process counts them once per revision and server and every later count reuses the number
_STARTS: dict[tuple, int] = {}


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

    @property
    def per_1000_docs(self) -> float | None:
        return instructions_per_1000_docs(self.ir_with_docs, self.ir_start, self.docs)

    def as_dict(self) -> dict:
        return {"server": self.server, "argv": self.argv, "docs": self.docs, "ir_with_docs": self.ir_with_docs,
                "ir_start": self.ir_start, "per_1000_docs": self.per_1000_docs, "valgrind": self.valgrind,
                "tool": " ".join(VALGRIND_OPTIONS), "sample_seed": SAMPLE_SEED, "start_reused": self.start_reused}


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


def server_for(language: str, env: dict | None = None) -> ServerSpec:
    """The query server on this machine that runs `language` (its first one: CouchDB's own where the
    release is found), or a one-line UsageError saying why there is none."""
    specs, skipped = discover(env)
    spec = next((s for s in specs if s.language == language and qsbench.reads_documents(s)), None)
    if spec is None:
        why = "; ".join(f"{k.name}: {k.reason}" for k in skipped if k.name == language or language in k.name)
        raise UsageError(f"--metric instructions: no query server for {language} on this machine"
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

def _one(spec: ServerSpec, lib: Any, groups: Sequence[MapGroup], lines: Sequence[bytes], out: Path) -> int:
    argv = (valgrind() or "valgrind", *VALGRIND_OPTIONS, f"--cachegrind-out-file={out}", "--", *spec.argv)
    qs, _ = start_design(dataclasses.replace(spec, argv=argv), lib, groups, TIMEOUT_S)
    try:
        for n, line in enumerate(lines, 1):
            answer = qs.prompt_raw(line)
            if answer[:1] != b"[" or answer.startswith(b'["error"'):
                raise ProtocolError(f"{spec.name} under valgrind answered {answer[:200]!r} to document {n}",
                                    spec.name)
    except BaseException:
        qs.kill()
        qs.close()
        raise
    stats = qs.close(timeout=TIMEOUT_S)   # valgrind writes its counts as the server exits
    if stats.returncode not in (0, None) or not out.exists():
        raise ProtocolError(f"{spec.name} under valgrind exited with {stats.returncode} and left no counts",
                            spec.name)
    return parse_summary(out.read_bytes())


def count(spec: ServerSpec, design: Design, docs: qsbench.DocSet) -> Count:
    """The design document's map functions counted over the documents (two processes, see the module)."""
    groups = map_groups(design)
    lib = (design.doc.get("views") or {}).get("lib")
    key = (spec.argv, spec.env, json.dumps(lib, sort_keys=True), tuple(g.map_source for g in groups))
    reused = key in _STARTS
    with tempfile.TemporaryDirectory(prefix="dragnet-instructions-") as tmp:
        if not reused:
            _STARTS[key] = _one(spec, lib, groups, (), Path(tmp) / "start.out")
        total = _one(spec, lib, groups, docs.lines, Path(tmp) / "docs.out")
    return Count(server=spec.name, argv=list(spec.argv), docs=len(docs), ir_with_docs=total, ir_start=_STARTS[key],
                 valgrind=valgrind_version(), start_reused=reused)
