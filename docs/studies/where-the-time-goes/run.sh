#!/bin/bash
cd /work/wt/scratch
# the admin password comes from the environment, never from a file or argv
export COUCHDB_USER=${COUCHDB_USER:-admin}
: "${COUCHDB_PASSWORD:?set COUCHDB_PASSWORD}"; export COUCHDB_PASSWORD
V=/work/wt/study45/docs/studies/where-the-time-goes/views/small
IMGS=dragnet-study/couchdb:3.5.0,dragnet-study/couchdb:3.5.2
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db small40k --data /tmp/study/small-40k.jsonl.gz --views $V --languages javascript,bun,ceiling,erlang --couchdb $IMGS --repeat 3 --results /tmp/study/small40k > /tmp/study/small40k.log 2>&1; echo "rc $?" >> /tmp/study/small40k.log
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db decl5k --data /tmp/study/decl-5k.jsonl.gz --views views/income --languages javascript,bun,ceiling,erlang --couchdb $IMGS --repeat 3 --results /tmp/study/decl5k > /tmp/study/decl5k.log 2>&1; echo "rc $?" >> /tmp/study/decl5k.log
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db small40k --data /tmp/study/small-40k.jsonl.gz --views $V --languages javascript,bun,ceiling,erlang --couchdb $IMGS --repeat 1 --profile --results /tmp/study/small40k-prof > /tmp/study/small40k-prof.log 2>&1; echo "rc $?" >> /tmp/study/small40k-prof.log
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db decl5k --data /tmp/study/decl-5k.jsonl.gz --views views/income --languages javascript,bun,ceiling,erlang --couchdb $IMGS --repeat 1 --profile --results /tmp/study/decl5k-prof > /tmp/study/decl5k-prof.log 2>&1; echo "rc $?" >> /tmp/study/decl5k-prof.log
