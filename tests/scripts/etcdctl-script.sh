#!/usr/bin/env bash
# An operator's check-and-backup script, written for etcdctl as SREs write it: health check,
# leader lookup with awk, a snapshot to a file, reads with jq. It uses nothing but etcdctl's
# syntax and output; etcdops must run it unchanged when it is put in etcdctl's place (a
# symlink named etcdctl on PATH), and print the same values. tests/tests/e2e/compat_script.rs
# runs it both ways.
#
#   ETCDCTL_ENDPOINTS=10.0.0.1:2379,10.0.0.2:2379 BACKUP_DIR=/var/backups/etcd ./etcdctl-script.sh
set -euo pipefail

export ETCDCTL_API=3
: "${ETCDCTL_ENDPOINTS:?set ETCDCTL_ENDPOINTS to the client URLs of the cluster}"
export ETCDCTL_ENDPOINTS
BACKUP_DIR=${BACKUP_DIR:-/tmp}
KEY=${KEY:-/config/app}
PREFIX=${PREFIX:-/config/}

die() { echo "etcd-check: $*" >&2; exit 1; }

# 1. Every member must be healthy before anything else.
etcdctl endpoint health --cluster >/dev/null 2>&1 || die "cluster is not healthy"
healthy=$(etcdctl endpoint health --cluster 2>&1 | grep -c 'is healthy')
echo "healthy members: $healthy"

# 2. Who leads? Column 5 of `endpoint status -w simple` is "is leader".
leader=$(etcdctl endpoint status --cluster -w simple | awk -F', ' '$5=="true"{print $1}')
[ -n "$leader" ] || die "no leader"
echo "leader: $leader"
leader_id=$(etcdctl endpoint status --cluster -w simple | awk -F', ' '$5=="true"{print $2}')
echo "leader id: $leader_id"
# The same from JSON: the endpoint whose member is its own leader.
leader_json=$(etcdctl endpoint status --cluster -w json \
  | jq -r '.[] | select(.Status.leader == .Status.header.member_id) | .Endpoint')
[ "$leader_json" = "$leader" ] || die "leader from JSON ($leader_json) differs from simple ($leader)"
echo "followers: $(etcdctl endpoint status --cluster -w simple | awk -F', ' '$5=="false"' | wc -l)"

# 3. Members and their client URLs.
echo "members:"
etcdctl member list -w json | jq -r '.members[].clientURLs[]' | sort | sed 's/^/  /'
echo "member names: $(etcdctl member list | awk -F', ' '{print $3}' | sort | tr '\n' ' ')"

# 4. Reads.
rev=$(etcdctl get "$KEY" -w json | jq -r '.header.revision')
echo "revision: $rev"
value=$(etcdctl get "$KEY" -w json | jq -r '.kvs[0].value|@base64d')
echo "value of $KEY: $value"
echo "value again: $(etcdctl get "$KEY" --print-value-only)"
echo "keys under $PREFIX: $(etcdctl get "$PREFIX" --prefix --keys-only | grep -c .)"
etcdctl get "$PREFIX" --prefix -w json | jq -r '.kvs[] | (.key|@base64d) + "=" + (.value // "" | @base64d)'
missing=$(etcdctl get /no/such/key --print-value-only)
[ -z "$missing" ] || die "a missing key printed '$missing'"
echo "missing key: empty"

# 5. Backup to a file (from one member: the leader found above), then check it without
#    etcdutl.
snap="$BACKUP_DIR/etcd-$(date +%Y%m%d-%H%M%S)-$$.db"
ETCDCTL_ENDPOINTS="$leader" etcdctl snapshot save "$snap" >/dev/null
[ -s "$snap" ] || die "snapshot $snap is empty"
[ -f "$snap" ] || die "snapshot $snap is not a file"
snap_rev=$(etcdctl snapshot status "$snap" -w json 2>/dev/null | jq -r '.revision')
[ "$snap_rev" -ge "$rev" ] || die "snapshot revision $snap_rev is behind $rev"
echo "snapshot: ok (revision $snap_rev)"
rm -f "$snap"
echo "done"
