# Kubernetes "Encrypting Confidential Data at Rest": verify a Secret is stored encrypted by
# reading it raw and looking for the provider's prefix (the docs pipe it to hexdump -C).
set -u
etcdctl get "$SECRET_KEY" | hexdump -C > "$WORK/dump"
if etcdctl get "$SECRET_KEY" | grep -a -q 'k8s:enc:aescbc:v1:'; then
  echo "encrypted with aescbc"
else
  echo "NOT encrypted"
fi
test -s "$WORK/dump" && echo "hexdump has $(grep -c '|' "$WORK/dump") lines"
