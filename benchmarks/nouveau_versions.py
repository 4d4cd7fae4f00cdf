"""Nouveau builds on several CouchDBs at once (e.g. 3.5.0 and 3.5.2), interleaved: the study in docs/studies/nouveau.md.

Run by hand, each CouchDB already up with its Nouveau server and the same data in --db:

    .venv/bin/python benchmarks/nouveau_versions.py --target 3.5.0=http://127.0.0.1:16630 \
        --target 3.5.2=http://127.0.0.1:16620 --languages javascript,javascript_quickjs \
        --batch-size 3.5.2=1,20,100 --rounds 3 --db decl --out docs/studies/nouveau/versions

Every round builds every variant (target × language × batch size) once in a random order; each build is one
dragnet.nouveau results file; the summary (medians, ratios against the first target, decide's verdicts on
CPU and on wall time per 1,000 documents, the load average) is printed and written as summary.json.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dragnet.axes import config as axis_config  # noqa: E402
from dragnet.bench import search_rounds as nb  # noqa: E402
from dragnet.index import search_build as nv  # noqa: E402
from dragnet.couchdb.client import connect  # noqa: E402
from dragnet.report.search_text import series_rows  # noqa: E402
from dragnet.results import schema  # noqa: E402

QUERIES = ("name:іван*", "post:голова", "workplace:суд", "income:[0 TO 1000]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", action="append", required=True, metavar="LABEL=URL")
    ap.add_argument("--languages", default="javascript")
    ap.add_argument("--batch-size", action="append", default=[], metavar="LABEL=N,N")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--db", default="decl")
    ap.add_argument("--index", default=str(Path(__file__).resolve().parents[1] / "docs/studies/nouveau/declarations.js"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    user, password = os.environ["COUCHDB_USER"], os.environ["COUCHDB_PASSWORD"]
    targets = dict(t.split("=", 1) for t in a.target)
    sizes = {k: v.split(",") for k, v in (b.split("=", 1) for b in a.batch_size)}
    [index] = nv.load_indexes(a.index)
    plan = [(label, lang, bs) for label in targets for lang in a.languages.split(",")
            for bs in sizes.get(label, [None])]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)
    builds = []
    setting = axis_config.parse("nouveau/batch_size=1")
    for rnd in range(1, a.rounds + 1):
        order = list(plan)
        rng.shuffle(order)
        for label, lang, bs in order:
            couch = connect(targets[label], user=user, password=password)
            applied = axis_config.Applied()
            variant = " ".join(x for x in (f"CouchDB {label}", lang, f"batch_size={bs}" if bs else "") if x)
            try:
                if bs:
                    applied.set(couch, setting, bs)
                res = nv.build(couch, nv.Config(url=couch.url, db=a.db, index=index, language=lang, queries=QUERIES,
                                                results_dir=None, extra={"variant": variant, "round": rnd}))
            finally:
                applied.restore(couch)
            name = f"r{rnd:02d}-{nb._slug(variant)}.json"
            schema.write(out / name, res)
            s = res["summary"]
            print(f"round {rnd} {variant}: {s['wall_time_s']:.1f} s, {s['cpu_s_per_1000_docs']:.3f} CPU s/1k docs, "
                  f"load {res['machine'].get('load_before')}", flush=True)
            builds.append(res)
    reference = builds[0]
    summary = {"rows": series_rows(builds), "verdicts": nb.verdicts(builds),
               "checks": [{"variant": r["variant"], "round": r["round"],
                           "differences": nv.compare_answers(reference, r)} for r in builds],
               "loads": [r["machine"].get("load_before") for r in builds],
               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    schema.write(out / "summary.json", summary)
    for row in summary["rows"]:
        print(row)
    for metric, v in summary["verdicts"].items():
        print(metric, v["text"])
        for p in v["pairs"]:
            iv = p["interval"]
            print(f"  {p['faster']} vs {p['slower']}: x{p['ratio']:.3f} [{iv['low']:.3f} .. {iv['high']:.3f}] "
                  f"n={iv['n']} {p['state']}")


if __name__ == "__main__":
    main()
