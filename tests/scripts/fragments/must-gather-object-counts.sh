# OpenShift must-gather's etcd object count: keys per resource type, from a keys-only read.
set -euo pipefail
etcdctl get /registry --prefix --keys-only | grep -v '^$' | awk -F/ '{print $3}' | sort | uniq -c | sed 's/^ *//'
echo "total: $(etcdctl get /registry --prefix --keys-only | grep -c .)"
