"""The study's tables from `dragnet report DIR --format json` (its engine_share), as markdown.
Usage: dragnet report DIR --format json | python3 tables.py"""
import json
import sys

doc = json.load(sys.stdin)
x = lambda v: "–" if v is None else f"×{v:.2f}"  # noqa: E731
for w in doc["engine_share"]:
    print(f"\n{w['workload']}, {w['storage']}\n")
    print("| engine | runs | wall s (median [min … max]) | × couchjs | × ceiling | × baseline | share [95%] | QS CPU · beam CPU · waiting |")
    print("|---|---|---|---|---|---|---|---|")
    for e in w["engines"]:
        sh = e["share"]
        share = "–" if sh is None else f"{sh['point']:.0%} [{sh['lo']:.0%} … {sh['hi']:.0%}]"
        sp = e["split"]
        split = "–" if sp is None else f"{sp['qs_cpu']:.0%} · {sp['beam_cpu']:.0%} · {sp['waiting']:.0%}"
        print(f"| {e['engine']} | {e['runs']} | {e['wall_s']:.2f} [{e['wall_min_s']:.2f} … {e['wall_max_s']:.2f}] | {x(e['x_couchjs'])} | {x(e['x_ceiling'])} | "
              f"{x(e['x_baseline'])} | {share} | {split} |")
    for g in w["gains"]:
        print(f"\n- {g['line']}")
