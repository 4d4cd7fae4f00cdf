#!/bin/sh
# Bench two revisions of a design doc in interleaved rounds, then fail on a significant slowdown.
#
# Environment: URL (CouchDB, no credentials: those come from COUCHDB_USER/COUCHDB_PASSWORD), DB, DATA (a
# .jsonl[.gz] file imported once; optional if DB is loaded), OLD and NEW (--ddoc sources: a JSON file, a couchapp
# folder, URL/db/_design/name or git:REF:path), LANGUAGES [javascript], ROUNDS [5], THRESHOLD [5%],
# OUT [results/ci], DRAGNET [dragnet]. Exit: 0 pass, 1 significantly slower (or newly failing), 2 bad input.
set -eu
D=${DRAGNET:-dragnet}
OUT=${OUT:-results/ci}
rm -rf "$OUT"
mkdir -p "$OUT"
i=1
while [ "$i" -le "${ROUNDS:-5}" ]; do
  # alternate which revision goes first, so a drifting load does not favour one of them
  if [ $((i % 2)) = 1 ]; then order="old new"; else order="new old"; fi
  for side in $order; do
    if [ "$side" = old ]; then src=$OLD; else src=$NEW; fi
    $D bench --url "$URL" --db "$DB" ${DATA:+--data "$DATA"} --ddoc "$src" --languages "${LANGUAGES:-javascript}" \
      --repeat 1 --no-baseline --results "$OUT/$side/r$i" >"$OUT/$side-r$i.log" 2>&1 \
      || { cat "$OUT/$side-r$i.log"; exit 2; }
  done
  i=$((i + 1))
done
rc=0
$D compare "$OUT/old" "$OUT/new" --markdown --fail-if-slower "${THRESHOLD:-5%}" >"$OUT/comment.md" || rc=$?
cat "$OUT/comment.md"
exit "$rc"
