#!/usr/bin/env bash
# librdkafka 2.15.1, the first librdkafka here that speaks KIP-848's consumer
# protocol (`group.protocol=consumer`; Debian 12 ships 2.0.2), built once per
# machine from pinned source and kept in a cache that every worktree shares.
#
#   librdkafka.sh [build]   build and install it unless the cache holds it;
#                           prints the library directory either way
#   librdkafka.sh path      print the library directory (building first if
#                           the cache does not hold it yet)
#   librdkafka.sh check     load it under Debian's python3-confluent-kafka
#                           (LD_LIBRARY_PATH=<dir>): libversion() must be
#                           2.15.1 and a Consumer with group.protocol=consumer
#                           must be accepted at construction
#   librdkafka.sh --help
#
# Source: the npm package @confluentinc/kafka-javascript 1.10.1, which ships
# librdkafka 2.15.1's source in deps/librdkafka. `npm pack` fetches the
# tarball without running any of the package's scripts; its sha512 must be
# the one pinned below; only deps/librdkafka is extracted, then `./configure`
# and `make libs` with Debian's packages only (missing ones are installed
# with apt-get).
#
# Cache: $GROUPCOORD_CACHE, else /var/cache/groupcoord when it can be
# written, else ~/.cache/groupcoord. The library lands in
# <cache>/librdkafka-2.15.1/lib (librdkafka.so.1 and librdkafka.so), its
# headers in <cache>/librdkafka-2.15.1/include; a build holds
# <cache>/librdkafka-2.15.1.lock, so two runs at once build it once. The
# build's output goes to <cache>/librdkafka-2.15.1.build.log; on failure its
# tail is printed.
#
# Environment: JOBS (default: number of cores), GROUPCOORD_CACHE.
set -euo pipefail

version=2.15.1
npm_spec=@confluentinc/kafka-javascript@1.10.1
# `npm view @confluentinc/kafka-javascript@1.10.1 dist.integrity`
npm_integrity=sha512-KVePUBn21EqCVP9mfxzEuM3SYJHHEF7X+iiC2e43QQgDSyEaksInmCGooT3w5q+cNAdkSCrK71j0ICfqoSqZLw==
jobs=${JOBS:-$(nproc)}
# What configure finds and uses: TLS, SASL (SCRAM, PLAIN, GSSAPI), zlib,
# zstd, lz4. Without them it still builds, with less.
packages=(build-essential pkg-config libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev)

log() { printf '\033[1m[librdkafka]\033[0m %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

cache_root() {
  if [ -n "${GROUPCOORD_CACHE:-}" ]; then
    echo "$GROUPCOORD_CACHE"
  elif mkdir -p /var/cache/groupcoord 2>/dev/null && [ -w /var/cache/groupcoord ]; then
    echo /var/cache/groupcoord
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/groupcoord"
  fi
}

cache=$(cache_root)
prefix=$cache/librdkafka-$version
lib_dir=$prefix/lib
# Written last, after the library is in place: its presence is what
# "installed" means, so a build killed halfway is not taken for one.
stamp=$prefix/.installed
build_log=$cache/librdkafka-$version.build.log

installed() {
  [ -f "$stamp" ] && [ -f "$lib_dir/librdkafka.so.1" ] && [ "$(cat "$stamp")" = "$npm_integrity" ]
}

# Another apt-get (a colleague's build, unattended upgrades) holds dpkg's
# lock: wait for it rather than fail on the lock.
wait_for_apt() {
  local waited=0
  while pgrep -x apt-get >/dev/null || pgrep -x dpkg >/dev/null; do
    [ $waited = 0 ] && log "another apt-get or dpkg runs; waiting for it"
    waited=$((waited + 1))
    [ $waited -le 600 ] || die "apt-get still runs after 10 minutes; try again later"
    sleep 1
  done
}

install_packages() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  [ ${#missing[@]} -gt 0 ] || return 0
  local apt_log=$cache/librdkafka-$version.apt.log
  log "installing: ${missing[*]} (log: $apt_log)"
  wait_for_apt
  if ! { as_root apt-get update -qq &&
    wait_for_apt &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    die "apt-get failed; the whole log is $apt_log"
  fi
}

# The npm integrity string is "sha512-" and the base64 of the digest.
verify_tarball() {
  local tarball=$1 actual
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  [ "$actual" = "$npm_integrity" ] ||
    die "$(basename "$tarball"): integrity $actual, pinned $npm_integrity; refusing to build it"
}

build_once() {
  local work tarball start elapsed
  work=$(mktemp -d "$cache/librdkafka-$version.work.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" EXIT

  log "fetching $npm_spec (npm pack, no scripts run)"
  tarball=$(cd "$work" && npm pack --ignore-scripts --silent "$npm_spec" | tail -n 1)
  [ -f "$work/$tarball" ] || die "npm pack gave no tarball (got '$tarball')"
  verify_tarball "$work/$tarball"
  log "$tarball: integrity matches the pinned sha512"

  tar -xzf "$work/$tarball" -C "$work" package/deps/librdkafka
  local src=$work/package/deps/librdkafka
  [ -x "$src/configure" ] || die "$tarball holds no deps/librdkafka/configure"

  log "building librdkafka $version with $jobs jobs (log: $build_log)"
  start=$SECONDS
  if ! (
    cd "$src"
    ./configure --prefix="$prefix"
    make -j "$jobs" libs
  ) >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    die "the build failed; the whole log is $build_log"
  fi
  elapsed=$((SECONDS - start))

  # The built version must be the pinned one, whatever the package holds.
  local built
  built=$(sed -n 's/^#define RD_KAFKA_VERSION *\(0x[0-9a-fA-F]*\).*/\1/p' "$src/src/rdkafka.h")
  [ "$built" = 0x020f01ff ] || die "deps/librdkafka is version $built, not $version (0x020f01ff)"

  rm -rf "$prefix"
  mkdir -p "$lib_dir" "$prefix/include/librdkafka"
  install -m 0755 "$src/src/librdkafka.so.1" "$lib_dir/librdkafka.so.1"
  ln -s librdkafka.so.1 "$lib_dir/librdkafka.so"
  install -m 0644 "$src/src/rdkafka.h" "$src/src/rdkafka_mock.h" "$prefix/include/librdkafka/"
  echo "$npm_integrity" >"$stamp"
  log "built in ${elapsed}s; installed in $lib_dir"
  rm -rf "$work"
  trap - EXIT
}

build() {
  installed && return 0
  mkdir -p "$cache"
  install_packages
  # One build per machine: a second run waits here, then finds it installed.
  exec 9>"$cache/librdkafka-$version.lock"
  if ! flock -n 9; then
    log "another run builds it; waiting"
    flock 9
  fi
  installed || build_once
  exec 9>&-
}

check() {
  local py=/usr/bin/python3 out
  # Debian's module, for Debian's Python: python3 on the PATH may be another
  # interpreter that does not see it.
  "$py" -c 'import confluent_kafka' 2>/dev/null ||
    die "Debian's python3-confluent-kafka is not installed (apt-get install python3-confluent-kafka)"
  out=$(LD_LIBRARY_PATH="$lib_dir" "$py" - "$version" <<'EOF'
import sys
import confluent_kafka

want = sys.argv[1]
got = confluent_kafka.libversion()[0]
if got != want:
    sys.exit(f"libversion() is {got}, not {want}")
# Construction validates the configuration: librdkafka 2.0.2 refuses
# group.protocol as an unknown property.
consumer = confluent_kafka.Consumer({
    "bootstrap.servers": "127.0.0.1:9",
    "group.id": "librdkafka-sh-check",
    "group.protocol": "consumer",
})
consumer.close()
print(f"librdkafka {got}: group.protocol=consumer accepted")
EOF
  ) || die "check failed (LD_LIBRARY_PATH=$lib_dir)"
  log "$out"
}

cmd=${1:-build}
case "$cmd" in
  build)
    build
    echo "$lib_dir"
    ;;
  path)
    build
    echo "$lib_dir"
    ;;
  check)
    build
    check
    ;;
  -h|--help|help)
    usage
    ;;
  *)
    echo "librdkafka.sh: unknown command '$cmd' (build, path, check, --help)" >&2
    usage >&2
    exit 2
    ;;
esac
