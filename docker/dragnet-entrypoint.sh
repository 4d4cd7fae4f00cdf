#!/bin/sh
# dragnet's additions to the official entrypoint: single-node or cluster mode from COUCHDB_SINGLE_NODE,
# then the official docker-entrypoint.sh (admin, secret, node name, privileges) as usual.
set -eu

if [ "${1:-}" = /opt/couchdb/bin/couchdb ] || [ "${1:-}" = couchdb ]; then
    case "${COUCHDB_SINGLE_NODE:-true}" in
        true|1|yes) single=true ;;
        false|0|no) single=false ;;
        *) echo "dragnet-entrypoint: COUCHDB_SINGLE_NODE must be true or false, not '$COUCHDB_SINGLE_NODE'" >&2
           exit 1 ;;
    esac
    # local.d is read after default.d, before docker.ini; rewritten on every start.
    printf '; written by dragnet-entrypoint.sh from COUCHDB_SINGLE_NODE\n[couchdb]\nsingle_node = %s\n' \
        "$single" > /opt/couchdb/etc/local.d/05-dragnet-node.ini
fi

exec /usr/local/bin/docker-entrypoint.sh "$@"
