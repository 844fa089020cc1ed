#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds and runs a project
# that finds the client library with find_package(groupcoord).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/groupcoord-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log"
for f in bin/groupcoordd bin/groupctl include/groupcoord/client/Consumer.h lib/cmake/groupcoord/groupcoordConfig.cmake; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; cat "$work/install.log"; exit 1; }
done
cmake -S "$source_dir/app" -B "$work/app" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work/app" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/app/package_user"
