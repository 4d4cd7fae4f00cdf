"""What a load asks for, and the arithmetic of its results (pure: no server, no clock).

A load is a set of request kinds, each at a fixed rate: `writes=200/s,updates=50/s,reads=100/s,view-reads=20/s`.
`none` is the idle build. The schedule is open-loop: request i of a kind is due at i / rate seconds after the
start whatever the answers before it did, so a slow CouchDB sees the same arrivals as a fast one and the
latency is measured from the time a request was due (what its client waited), not only from when it left.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from dragnet.errors import UsageError

NONE = "none"
WRITES, UPDATES, READS, VIEW_READS, VIEW_WAITS = "writes", "updates", "reads", "view-reads", "view-waits"
KINDS = {
    WRITES: "insert a new document shaped like the database's (PUT with a fresh id)",
    UPDATES: "read one of the load's documents, change a field, write it back with its _rev",
    READS: "GET a document by id",
    VIEW_READS: "query the view being built with update=false (what a stale reader sees)",
    VIEW_WAITS: "query the view being built with update=true (a reader who waits for the index)",
}
VIEW_KINDS = (VIEW_READS, VIEW_WAITS)
WRITE_KINDS = (WRITES, UPDATES)
# requests of one kind waiting for an answer at once; beyond it a due request is counted as not sent
MAX_IN_FLIGHT = 512
_PER = {"s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*/\s*([a-z]+)\s*$")


@dataclass(frozen=True)
class LoadSpec:
    """Rates in requests per second by kind; no kind: the idle build (`none`)."""

    rates: tuple[tuple[str, float], ...] = ()

    @property
    def idle(self) -> bool:
        return not self.rates

    def rate(self, kind: str) -> float:
        return dict(self.rates).get(kind, 0.0)

    @property
    def total(self) -> float:
        return sum(r for _, r in self.rates)

    @property
    def reads_view(self) -> bool:
        return any(k in VIEW_KINDS for k, _ in self.rates)

    @property
    def writes(self) -> bool:
        return any(k in WRITE_KINDS for k, _ in self.rates)

    def text(self) -> str:
        return ",".join(f"{k}={_num(r)}/s" for k, r in self.rates) or NONE


def _num(x: float) -> str:
    return f"{x:g}"


def parse_rate(text: str, where: str) -> float:
    """'200/s' -> 200.0, '30/min' -> 0.5; a rate that is not a positive number per s/min/h is refused."""
    m = _RATE.match(text.lower())
    if not m or m.group(2) not in _PER:
        raise UsageError(f"{where}: {text!r} is not a rate (e.g. 200/s, 30/min)")
    value = float(m.group(1)) / _PER[m.group(2)]
    if not value > 0 or math.isinf(value):
        raise UsageError(f"{where}: {text!r}: a rate must be above zero")
    return value


def parse(text: str, where: str = "--load") -> LoadSpec:
    """'writes=200/s,reads=100/s' -> LoadSpec; 'none' -> the idle one. Unknown kinds, a kind given twice,
    negative or unparseable rates are refused in one line."""
    text = (text or "").strip()
    if text.lower() == NONE:
        return LoadSpec()
    if not text:
        raise UsageError(f"{where}: empty (give {NONE} or KIND=RATE,…; kinds: {', '.join(KINDS)})")
    out: dict[str, float] = {}
    for part in text.split(","):
        kind, eq, rate = part.strip().partition("=")
        kind = kind.strip().lower()
        if not eq:
            raise UsageError(f"{where}: {part.strip()!r} is not KIND=RATE (e.g. writes=200/s)")
        if kind not in KINDS:
            raise UsageError(f"{where}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
        if kind in out:
            raise UsageError(f"{where}: {kind} given twice")
        if rate.strip().startswith("-"):
            raise UsageError(f"{where}: {kind}={rate.strip()}: a rate must be above zero")
        out[kind] = parse_rate(rate, f"{where} {kind}")
    return LoadSpec(tuple((k, out[k]) for k in KINDS if k in out))


def parse_values(text: str | Sequence[str] | None, where: str = "--load") -> list[str]:
    """The values of a `--load` axis, each given as `;`-separated or repeated options: every value is a
    whole load (its kinds are separated by commas), normalised ('none', 'writes=200/s,reads=100/s')."""
    if text is None:
        return []
    items = [text] if isinstance(text, str) else list(text)
    out: list[str] = []
    for item in items:
        for value in split_values(item):
            norm = parse(value, where).text()
            if norm in out:
                raise UsageError(f"{where}: {norm} given twice")
            out.append(norm)
    return out


def split_values(text: str) -> list[str]:
    """'none,writes=200/s,reads=10/s' -> ['none', 'writes=200/s,reads=10/s']: a new value starts at `none`
    or at a kind already seen in the current value; `;` always starts one."""
    values: list[list[str]] = []
    for chunk in text.split(";"):
        current: list[str] = []
        seen: set[str] = set()
        for part in (p.strip() for p in chunk.split(",")):
            if not part:
                continue
            kind = part.partition("=")[0].strip().lower()
            if kind == NONE or kind in seen or (current and current[0].lower() == NONE):
                if current:
                    values.append(current)
                current, seen = [], set()
            current.append(part)
            seen.add(kind)
        if current:
            values.append(current)
    return [",".join(v) for v in values]


# ---------------------------------------------------------------- the schedule

def due_times(rate: float, start: float, until: float) -> Iterable[float]:
    """The times requests of one kind are due, from start (the first at start) to before until."""
    i = 0
    while True:
        t = start + i / rate
        if t >= until:
            return
        yield t
        i += 1


def due_count(rate: float, seconds: float) -> int:
    """How many requests a kind at `rate` is due in `seconds` (ceil: the first is due at once)."""
    return 0 if seconds <= 0 else math.ceil(seconds * rate - 1e-9)


def achieved(sent: int, seconds: float) -> float | None:
    return sent / seconds if seconds > 0 else None


def held(asked: float, got: float | None, within: float = 0.05) -> bool:
    """Whether the achieved rate is within `within` of the asked one."""
    return got is not None and abs(got - asked) <= within * asked


# ---------------------------------------------------------------- results

def latency_summary(seconds: Sequence[float]) -> dict | None:
    """p50/p95/p99/max in milliseconds, and the count."""
    from dragnet.measure.stats import percentile

    if not seconds:
        return None
    ms = [s * 1000.0 for s in seconds]
    return {"n": len(ms), "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95),
            "p99_ms": percentile(ms, 99), "max_ms": max(ms)}


CONFLICT = "conflict"


def reason_of(status: int | None, error: str | None = None) -> str:
    """One reason for a failed request: 'conflict' apart, else the HTTP status and CouchDB's error, or the
    connection's failure ('refused', 'reset', 'timeout')."""
    if status == 409:
        return CONFLICT
    if status is None:
        return error or "no answer"
    return f"{status} {error}".strip() if error else str(status)


def lost_writes(acknowledged: dict[str, str], found: dict[str, str | None],
                later: dict[str, dict] | None = None) -> list[dict]:
    """Acknowledged writes not in the database as acknowledged: id -> last acknowledged rev against id ->
    the rev the database has (None: missing). A later rev counts as kept when the acknowledged one is among
    its ancestors (`later`: id -> the document's `_revisions`): a write sent after it whose answer the load
    did not wait for (cancelled at stop, timed out) superseded it."""
    later = later or {}
    return [{"id": i, "acknowledged_rev": rev, "found_rev": found.get(i)}
            for i, rev in sorted(acknowledged.items())
            if found.get(i) != rev and not descends(rev, later.get(i))]


def rev_generation(rev: str | None) -> int:
    head = (rev or "").split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def descends(rev: str, revisions: dict | None) -> bool:
    """Whether `rev` ('3-abc') is in a document's `_revisions` ({"start": 5, "ids": [newest, …]})."""
    if not revisions or not rev:
        return False
    gen, _, h = rev.partition("-")
    start, ids = revisions.get("start"), revisions.get("ids") or []
    if not gen.isdigit() or not isinstance(start, int):
        return False
    k = start - int(gen)
    return 0 <= k < len(ids) and ids[k] == h


def seq_number(seq) -> int | None:
    """The count in a CouchDB update sequence: an int, or the number before '-' of a clustered one
    ('1234-g1AAAA…' is the sum over the shards)."""
    if isinstance(seq, int):
        return seq
    if isinstance(seq, str):
        head = seq.split("-", 1)[0]
        return int(head) if head.isdigit() else None
    return None
