#!/bin/sh
# Bench two revisions of a design doc in shuffled interleaved rounds until the regression gate decides.
#
# Environment: URL (CouchDB, no credentials: those come from COUCHDB_USER/COUCHDB_PASSWORD), DB, DATA (a
# .jsonl[.gz] file imported once; optional if DB is loaded), OLD and NEW (--ddoc sources: a JSON file, a couchapp
# folder, URL/db/_design/name or git:REF:path), LANGUAGES [javascript], MAX_RUNS [15], THRESHOLD [5%],
# METRIC [instructions: valgrind's counts of the map functions; qs where valgrind is missing], OUT [results/ci],
# DRAGNET [dragnet].
# Exit: 0 pass (the slowdown's 99% interval lies below THRESHOLD), 1 slower beyond it (or newly failing),
# 2 bad input, 3 undecided after MAX_RUNS rounds (the comment says how many more would likely decide).
set -eu
D=${DRAGNET:-dragnet}
OUT=${OUT:-results/ci}
METRIC=${METRIC:-$(command -v valgrind >/dev/null 2>&1 && echo instructions || echo qs)}
rm -rf "$OUT"
mkdir -p "$OUT"
rc=0
$D bench --url "$URL" --db "$DB" ${DATA:+--data "$DATA"} --ddoc "old=$OLD" --ddoc "new=$NEW" \
  --languages "${LANGUAGES:-javascript}" --no-baseline --gate "${THRESHOLD:-5%}" --metric "$METRIC" \
  --max-runs "${MAX_RUNS:-15}" --results "$OUT/bench" >"$OUT/bench.log" 2>&1 || rc=$?
case $rc in
  0|1|3) ;;
  *) cat "$OUT/bench.log"; exit "$rc" ;;
esac
# the gate's own decision as the pull request's comment (what it judged each figure on included)
cp "$OUT/bench/comment.md" "$OUT/comment.md"
cat "$OUT/comment.md"
exit "$rc"
