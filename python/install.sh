#!/usr/bin/env bash
# Installs the groupcoord Python package into a virtual environment, with
# Debian's packages only (no Python package index is needed):
#
#   python/install.sh [VENV_DIR]      # default: .venv in the current folder
#
# It installs python3-venv, python3-setuptools and python3-wheel when they
# are missing (apt-get, with sudo when not root), makes the environment with
# Debian's python3 and access to its packages, and installs ./python into it.
# Then: VENV_DIR/bin/python -c 'import groupcoord'.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
venv=${1:-.venv}
python=${PYTHON:-/usr/bin/python3}
packages=(python3 python3-venv python3-setuptools python3-wheel)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet --no-build-isolation --no-index "$here"
rm -rf "$here/build" "$here"/*.egg-info
"$venv/bin/python" -c 'import groupcoord; print("groupcoord", groupcoord.__version__, "installed in", __import__("sys").prefix)'
