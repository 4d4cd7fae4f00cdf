"""`qsbench --couchdb URL`: the servers qsbench ranked over the protocol, built inside a CouchDB on the same
documents, with the ceiling, so the two rankings stand side by side.

A bench (dragnet.bench.run) with one language per CouchDB language of the servers, the ceiling and no
baseline; pure helpers map qsbench's server names to bench languages (the rankings side by side are
dragnet.report.qsbench_inside's).
"""

from __future__ import annotations

from typing import Callable, Sequence

from dragnet.bench import run as b
from dragnet.servers.discovery import DIALECT_FILES, ServerSpec


def bench_language(spec: ServerSpec) -> str | None:
    """The bench language that runs spec's code inside CouchDB (None: no bench language does)."""
    variant = f"{spec.language}_{spec.dialect}"
    if variant in b.LANGUAGES:
        return variant
    lang = b.LANGUAGES.get(spec.language)
    return lang.name if lang is not None and lang.view_file == DIALECT_FILES.get(spec.dialect) else None


def languages_for(specs: Sequence[ServerSpec]) -> tuple[dict[str, str], list[str]]:
    """server name -> bench language (the first server of a language: CouchDB runs one per language), and
    why the others are left out."""
    chosen: dict[str, str] = {}
    left = []
    for s in specs:
        lang = bench_language(s)
        if lang is None:
            left.append(f"{s.name}: no bench language runs its {s.dialect} code")
        elif lang in chosen.values():
            other = next(n for n, v in chosen.items() if v == lang)
            left.append(f"{s.name}: CouchDB runs one server for {s.language}, here {other}")
        else:
            chosen[s.name] = lang
    return chosen, left


def run_inside(url: str, db: str, data: str, names: dict[str, str], *, views: str, repeat: int,
               results_dir: str | None = None, on_event: Callable[[str, dict], None] | None = None,
               env: dict | None = None) -> dict:
    """The bench of those languages and the ceiling inside the CouchDB at url (data imported into db once)."""
    config = b.BenchConfig(url=url, db=db, languages=list(dict.fromkeys(names.values())), repeat=repeat, data=data,
                           views=views, results_dir=results_dir, baseline=False)
    return b.Bench(config, on_event=on_event, env=env).run()
