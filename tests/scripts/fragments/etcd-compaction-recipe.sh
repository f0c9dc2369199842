# etcd's maintenance guide: compact to the current revision found from one member's status
# (the recipe writes --endpoints=:2379), then defragment it.
set -eu
unset ETCDCTL_ENDPOINTS  # the recipe names its endpoint on the command line
rev=$(etcdctl --endpoints=:"$PORT" endpoint status --write-out="json" | egrep -o '"revision":[0-9]*' | egrep -o '[0-9].*')
[ -n "$rev" ] || { echo "no revision"; exit 1; }
echo "revision found"
etcdctl --endpoints=:"$PORT" compact "$rev" | sed 's/[0-9][0-9]*/N/'
etcdctl --endpoints=:"$PORT" defrag | sed 's/\[[^]]*\]/[M]/'
