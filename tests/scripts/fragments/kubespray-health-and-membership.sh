# kubespray's etcd role: "is the cluster healthy" (unhealthy lines looked for, etcdctl's final
# error line ignored) and "is this member already in the cluster".
set -u
if etcdctl endpoint --cluster health 2>&1 | grep -v 'Error: unhealthy cluster' | grep -q unhealthy; then
  echo "cluster unhealthy"
else
  echo "cluster healthy"
fi
if etcdctl member list | grep -qw "$MEMBER_NAME"; then
  echo "member $MEMBER_NAME present"
fi
if etcdctl member list | grep -qw "no-such-member"; then
  echo "no-such-member present"
else
  echo "no-such-member absent"
fi
