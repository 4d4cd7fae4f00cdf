"""The small documents of docs/engine-share.md: N documents of about 150 bytes, seeded (python3 make_small.py N OUT)."""
import json
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(37)
types = ["invoice", "order", "payment", "refund", "note"]
with open(out, "w", encoding="utf-8") as fh:
    for i in range(n):
        doc = {"_id": f"s{i:07d}", "type": rng.choice(types), "amount": round(rng.uniform(1, 10000), 2),
               "customer": f"c{rng.randrange(100000):06d}", "created": f"2026-{rng.randrange(1, 13):02d}-"
               f"{rng.randrange(1, 29):02d}", "tags": rng.sample(["a", "b", "c", "d", "e"], 2)}
        fh.write(json.dumps(doc, separators=(",", ":")) + "\n")
