# OpenShift 3.x playbooks' endpoint discovery: the client URLs from the fields output.
set -eu
etcdctl --write-out=fields member list | awk '/ClientURL/{print $3}' | tr -d '"' | sort
echo "members: $(etcdctl -w fields member list | grep -c '"ID"')"
