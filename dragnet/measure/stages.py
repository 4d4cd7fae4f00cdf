"""The stages of a view build, as data: which frames of a profile belong to which stage (pure).

A folded stack reads `process;thread;root;...;leaf`. The stage of a stack is the first rule, in the order
of RULES, that names one of its frames, looking from the leaf up (the deepest named frame says what the
code was doing); where no frame names a stage, the thread's kind does (a dirty-CPU scheduler in CouchDB
mostly runs full garbage collections; a dirty-I/O one file reads and writes). A process that is not beam
is a query server. The names follow couch_mrview and couch_index:
- `read`: reading documents (couch_btree folds of the by-seq tree, couch_file reads, snappy);
- `encode`: encoding documents and sending them to the query server (couch_os_process, couch_query_servers,
  jiffy, the port);
- `query_server`: the query server's own CPU (its process) — beam waiting for it;
- `gc_prompt`: the full garbage collection couch_os_process runs after every prompt;
- `gc`: other garbage collection (the updater's, with `[view_updater] gc_interval_docs` on 3.5.2);
- `queues`: the updater's queues between loader, mapper and writer (couch_work_queue);
- `write`: writing the view B-trees (couch_btree:add/query_modify, key collation couch_ejson_compare,
  compression, couch_file writes);
- `map_fun`: for Erlang views, the map function itself (couch_native_process, the compiled fun);
- `erlang_other`: named Erlang code of none of those; `unnamed`: beam code perf could not name.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping

STAGES = ("read", "encode", "query_server", "gc_prompt", "gc", "queues", "write", "file_io", "map_fun",
          "spin", "erlang_other", "unnamed")

LABELS = {
    "read": "reading documents",
    "encode": "encoding and sending to the query server",
    "query_server": "the query server's own CPU",
    "gc_prompt": "GC after every prompt (couch_os_process)",
    "gc": "GC (dirty CPU schedulers: full GCs)",
    "queues": "the updater's queues",
    "write": "writing the view B-trees",
    "file_io": "file reads and writes (dirty I/O schedulers)",
    "map_fun": "the Erlang map function",
    "spin": "schedulers spinning for work",
    "erlang_other": "other Erlang code",
    "unnamed": "beam, unnamed",
}


@dataclass(frozen=True)
class Rule:
    """A stack belongs to `stage` when every one of `patterns` is found in some frame of it."""

    stage: str
    patterns: tuple[str, ...]
    why: str = ""

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"rule {self.patterns!r}: unknown stage {self.stage!r}")


GC = r"garbage_collect|erts_gc|major_collection|minor_collection|sweep_|gc_sweep"
# Rules in priority order: the first rule matching a stack gives its stage. A stack is one Erlang process's
# (or one beam thread's) call chain, so the outermost CouchDB function says which updater process it is:
# the writer's B-tree updates read nodes too (snappy, couch_file:pread), yet they are writing; the loader's
# folds are reading. Erlang frames come from the JIT's perf map as `$module:function/arity`.
RULES: tuple[Rule, ...] = (
    Rule("gc_prompt", (GC, r"couch_os_process"), "couch_os_process:prompt's garbage_collect() after each prompt"),
    Rule("map_fun", (r"couch_native_process|couch_mrview_map|^\$?erl_eval:",), "an Erlang view's map"),
    Rule("gc", (GC,), "named GC code"),
    Rule("queues", (r"couch_work_queue",), "loader to mapper to writer"),
    Rule("write", (r"couch_mrview_updater:(write|merge|insert)|couch_btree:(query_modify|add_remove|add/|"
                   r"modify_|write_node|reduce_node|complete_root|chunkify)|couch_ejson_compare|"
                   r"couch_mrview_util:(update_|to_key_seq|maybe)|couch_file:(append|write|pwrite)|"
                   r"couch_compress:compress|snappy::Compress\b|snappy_compress",), "the view's B-trees"),
    Rule("encode", (r"couch_os_process|couch_query_servers|couch_mrview_updater:map|jiffy|enc_string|"
                    r"^enc_|^dec_|couch_proc_manager|erts_port_output|port_command|erl_drv_|spawn_drv",),
         "documents to the query server and rows back"),
    Rule("read", (r"couch_index_updater|couch_bt_engine|couch_btree:(fold|stream|lookup|get_node)|"
                  r"couch_file:(pread|read)|couch_db:(open_doc|get_doc|fold|changes)|couch_doc:|"
                  r"couch_compress:decompress|snappy.*[Uu]ncompress|snappy_decompress|couch_changes",),
         "documents out of the database"),
    Rule("spin", (r"sched_yield",), "a scheduler busy-waiting (+sbwt) before it sleeps"),
)

# thread kinds (beam's thread names, truncated to 15 characters by the kernel) when no rule matched
# (OTP 25 names them `1_dirty_cpu_sch`, `7_dirty_io_sche`; OTP 26+ `erts_dcpus_1`, `erts_dios_7`)
THREAD_STAGES: tuple[tuple[str, str], ...] = (
    (r"dirty_cpu|erts_dcpus", "gc"),   # CouchDB runs no dirty NIF of its own: these are full GCs
    (r"dirty_io|erts_dios", "file_io"),  # couch_file's prim_file calls
)

_COMPILED = tuple((r.stage, tuple(re.compile(p) for p in r.patterns)) for r in RULES)
_THREADS = tuple((re.compile(p), s) for p, s in THREAD_STAGES)
BEAM = "beam.smp"
_ERLANG = re.compile(r"^\$?'?[a-z][\w@.]*'?:.+/\d+$")


def is_erlang_frame(frame: str) -> bool:
    """An Erlang function named by the JIT's map: `$mod:fun/arity` or `mod:fun/arity`."""
    return bool(_ERLANG.match(frame)) and not frame.startswith(("$global:", "$erts_beamasm:"))


def stage_of(stack: str) -> str:
    frames = stack.split(";")
    if frames[0] != BEAM:
        return "query_server"
    thread = frames[1] if len(frames) > 1 else ""
    body = frames[2:]
    for stage, patterns in _COMPILED:
        if all(any(rx.search(f) for f in body) for rx in patterns):
            return stage
    if any(is_erlang_frame(f) for f in body):
        return "erlang_other"
    for rx, stage in _THREADS:
        if rx.search(thread):
            return stage
    return "unnamed"


@dataclass(frozen=True)
class StageShares:
    """Samples per stage, with the shares of beam's samples and of all CouchDB's."""

    samples: Mapping[str, int]
    named: int             # beam samples with at least one Erlang frame named by the JIT map

    @property
    def total(self) -> int:
        return sum(self.samples.values())

    @property
    def beam(self) -> int:
        return self.total - self.samples.get("query_server", 0)

    def share(self, stage: str) -> float | None:
        return self.samples.get(stage, 0) / self.total if self.total else None

    def beam_share(self, stage: str) -> float | None:
        if stage == "query_server":
            return None
        return self.samples.get(stage, 0) / self.beam if self.beam else None

    def as_dict(self, cpu_s_per_sample: float | None = None, core_s: float | None = None) -> dict:
        """Per stage: samples, share of CouchDB's samples and of beam's; with cpu_s_per_sample its CPU-seconds,
        and with core_s (the build's interval × the cores CouchDB could use) its share of the build."""
        out = {}
        for s in STAGES:
            n = self.samples.get(s, 0)
            if not n:
                continue
            out[s] = {"samples": n, "share": round(self.share(s) or 0, 4),
                      "beam_share": None if s == "query_server" else round(self.beam_share(s) or 0, 4)}
            if cpu_s_per_sample:
                out[s]["cpu_s"] = round(n * cpu_s_per_sample, 4)
                if core_s:
                    out[s]["build_share"] = round(n * cpu_s_per_sample / core_s, 4)
        return out


def shares(stacks: Mapping[str, int]) -> StageShares:
    by: Counter = Counter()
    named = 0
    for stack, n in stacks.items():
        by[stage_of(stack)] += n
        if stack.startswith(BEAM + ";") and any(is_erlang_frame(f) for f in stack.split(";")[2:]):
            named += n
    return StageShares(dict(by), named)


# OTP 26+'s thread names, as OTP 25 called the same kinds (so that one release's threads read like another's)
THREAD_KINDS = {"erts_sched": "scheduler", "erts_dcpus": "dirty_cpu_sch", "erts_dios": "dirty_io_sche"}


def by_thread(stacks: Mapping[str, int]) -> dict[str, int]:
    """Samples per thread kind (scheduler numbers dropped): `beam.smp/dirty_cpu_sch`, `couchjs`..."""
    out: Counter = Counter()
    for stack, n in stacks.items():
        frames = stack.split(";")
        process = frames[0]
        thread = re.sub(r"^\d+_|_\d+$", "", frames[1]) if len(frames) > 1 else ""
        thread = THREAD_KINDS.get(thread, thread)
        out[f"{process}/{thread}" if process == BEAM else process] += n
    return dict(out)
