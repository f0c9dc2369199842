# kubeadm 1.13-1.15's etcd liveness probe, still copied in how-tos: a bracketed IPv4 endpoint
# (the probe used https; this cluster speaks http) and a read of the key `foo`.
set -u
unset ETCDCTL_ENDPOINTS  # the probe names its endpoint on the command line
ETCDCTL_API=3 etcdctl --endpoints="http://[127.0.0.1]:$PORT" get foo >/dev/null
echo "probe exit code: $?"
