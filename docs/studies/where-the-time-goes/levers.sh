#!/bin/bash
cd /work/wt/scratch
# the admin password comes from the environment, never from a file or argv
export COUCHDB_USER=${COUCHDB_USER:-admin}
: "${COUCHDB_PASSWORD:?set COUCHDB_PASSWORD}"; export COUCHDB_PASSWORD
V=/work/wt/study45/docs/studies/where-the-time-goes/views/small
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db small40k --data /tmp/study/small-40k.jsonl.gz --views $V --languages ceiling --couchdb dragnet-study/couchdb:3.5.2 --config view_updater/gc_interval_docs=1,100,1000 --repeat 3 --results /tmp/study/lever-gc > /tmp/study/lever-gc.log 2>&1; echo "rc $?" >> /tmp/study/lever-gc.log
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db small40k --data /tmp/study/small-40k.jsonl.gz --views $V --languages ceiling --couchdb dragnet-study/couchdb:3.5.2 --storage disk,tmpfs --repeat 3 --results /tmp/study/lever-storage > /tmp/study/lever-storage.log 2>&1; echo "rc $?" >> /tmp/study/lever-storage.log
# the upgrade again, 5 rounds, once the machine was quieter
.venv/bin/dragnet bench --backend docker --url http://127.0.0.1:17100 --db small40k --data /tmp/study/small-40k.jsonl.gz --views $V --languages javascript,ceiling --couchdb dragnet-study/couchdb:3.5.0,dragnet-study/couchdb:3.5.2 --repeat 5 --results /tmp/study/lever-upgrade > /tmp/study/lever-upgrade.log 2>&1; echo "rc $?" >> /tmp/study/lever-upgrade.log
