# Rancher's etcd troubleshooting: members, leader and versions from JSON with jq; alarms.
set -euo pipefail
etcdctl endpoint status --cluster -w json | jq -r '.[] | [.Status.header.member_id, .Status.version] | @tsv' | sort
etcdctl endpoint status --cluster -w json | jq -r '[.[] | select(.Status.leader == .Status.header.member_id)] | length'
etcdctl endpoint health --cluster -w json | jq -r '.[] | .health' | sort | uniq -c | sed 's/^ *//'
echo "alarms: $(etcdctl alarm list | wc -l)"
