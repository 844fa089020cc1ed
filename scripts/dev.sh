#!/usr/bin/env bash
# The two commands of the README, and the steps they share.
#
#   scripts/dev.sh run  [groupcoordd options...]
#       install what is missing, build, start a local three-node ZooKeeper
#       ensemble on 127.0.0.1:2181-2183 and run groupcoordd in the
#       foreground against it; Ctrl-C stops both.
#   scripts/dev.sh test [ctest options...]
#       install what is missing, build, start a test ensemble on
#       127.0.0.1:21801-21803 (tick 500 ms), run every test with ctest, stop
#       the ensemble; exits non-zero on any failure. Extra options go to
#       ctest, e.g. `-L unit`, `-L integration`, `-R Codec`. Without
#       ctest options it also builds everything with Clang's thread-safety
#       analysis (scripts/thread-safety.sh, in build-tsa; before the
#       ensemble starts) and fuzzes both codecs for 60 s in all (scripts/fuzz.sh);
#       either failing fails the run. GROUPCOORD_THREAD_SAFETY_BUILD=0
#       skips the thread-safety build (1: run it even with ctest options);
#       GROUPCOORD_FUZZ_SECONDS sets the fuzzing time (0: no fuzzing).
#       GROUPCOORD_TEST_BUSY=N runs N CPU-bound loops beside the tests (from
#       the ensemble's start to the end, each in a session of its own, as
#       other users' processes are), to show that a busy machine fails no
#       test (tests/README.md, "Time in tests"). The "[figure]" lines the
#       tests print are gathered into <build>/Testing/figures.txt.
#   scripts/dev.sh setup     install the packages only (and KafkaJS for
#       tests/kafka: npm ci in tests/kafka/js, skipped when installed)
#   scripts/dev.sh build     setup, then configure and build only
#   scripts/dev.sh generate
#       setup, configure, build groupcoord-options and groupcoord-messages and
#       write the files printed from the option table (common/Options.h):
#       packaging/groupcoordd.properties, docs/options.md, README.md's table
#       of first options; and from the messages' descriptions
#       (protocol/Messages.h): the field tables of docs/protocol.md and
#       python/groupcoord/_layouts.py. Tests (server_option_docs_test,
#       protocol_message_docs_test) fail while one is stale.
#   scripts/dev.sh tsa [cmake --build options...]
#       setup, then the thread-safety build alone (scripts/thread-safety.sh):
#       Clang, -Wthread-safety -Werror=thread-safety, every target; non-zero
#       on any violation. E.g. `tsa --target groupcoord_zk`.
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (RelWithDebInfo),
# CMAKE_ARGS (extra configure arguments, e.g. -DGROUPCOORD_SANITIZE=ON),
# GROUPCOORD_DEBUG_INFO (0: RelWithDebInfo's -O2 without -g, about a third
# less compile time; CI sets it, nothing it runs needs debug information),
# JOBS (default: number of cores), TSA_BUILD_DIR (default build-tsa).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
jobs=${JOBS:-$(nproc)}

packages=(
  build-essential cmake git netcat-openbsd procps
  zookeeper libzookeeper-mt-dev default-jre-headless
  libpoco-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev openssl
  docker-compose python3-yaml
  clang libclang-rt-14-dev nftables iproute2
  chromium fonts-dejavu-core curl
  python3 python3-venv python3-setuptools python3-wheel
  kcat python3-confluent-kafka python3-kafka nodejs
)

log() { printf '\033[1m[dev]\033[0m %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

setup() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # npm: Debian's package, unless the nodejs installed brings its own npm
  # (a nodejs built elsewhere conflicts with Debian's npm package).
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if [ ${#missing[@]} -eq 0 ]; then
    log "all packages present"
  else
    log "installing: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  setup_kafkajs
}

# KafkaJS for the Kafka port's client tests (tests/kafka): exactly the
# versions of tests/kafka/js/package-lock.json, by npm ci into
# tests/kafka/js/node_modules (git-ignored). Skipped while node_modules was
# installed from the lockfile as it is now (npm keeps its own copy of the
# lockfile it installed, node_modules/.package-lock.json).
setup_kafkajs() {
  local js="$root/tests/kafka/js"
  if [ -f "$js/node_modules/.package-lock.json" ] && [ "$js/node_modules/.package-lock.json" -nt "$js/package-lock.json" ] &&
    [ -f "$js/node_modules/kafkajs/package.json" ]; then
    log "kafkajs present (tests/kafka/js/node_modules)"
    return
  fi
  log "installing kafkajs for tests/kafka (npm ci)"
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
}

build() {
  log "configuring in $build_dir ($build_type)"
  # Said every time, so that a build directory configured the other way
  # comes back (the flags are kept in its cache).
  local flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG")
  if [ "${GROUPCOORD_DEBUG_INFO:-1}" = 0 ]; then flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"); fi
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" "${flags[@]}" ${CMAKE_ARGS:-} > "$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log" >&2; exit 1; }
  log "building with $jobs jobs"
  cmake --build "$build_dir" -j "$jobs" "$@"
}

# The failed tests' own words, last: a long run's output is often read from
# its end, where ctest's summary names a failed suite but not what failed
# in it. Each failed GoogleTest case with the assertion lines before it.
failure_digest() {
  local log=$1
  [ -f "$log" ] || return 0
  log "what failed, from $log:"
  awk '
    /^\[ RUN +\]/ { n = 0; after = 0; delete keep; next }
    /Failure$/ { after = 4 }
    after > 0 || /^\[figure\]/ {
      if (n < 16) keep[n++] = $0
      if (after > 0) after--
      next
    }
    /^\[  FAILED  \] [A-Za-z_]+\.[A-Za-z_0-9]+ \(/ {
      print; for (i = 0; i < n; i++) print "    " substr(keep[i], 1, 400); n = 0; delete keep
    }
  ' "$log" | tail -n 80 >&2
}

# GROUPCOORD_TEST_BUSY: CPU-bound loops beside the tests. Each runs in a
# session of its own (setsid), as another user's process would: with the
# kernel's autogroup scheduling a loop in the tests' own session would take
# its share from the tests alone. Stopped by their PIDs when the run ends, and
# each ends by itself once this script has gone.
busy_pids=()
start_busy() {
  local n=$1 i
  case "$n" in ''|*[!0-9]*) echo "dev.sh: GROUPCOORD_TEST_BUSY must be a number, not '$n'" >&2; exit 2 ;; esac
  [ "$n" -gt 0 ] || return 0
  for ((i = 0; i < n; i++)); do
    # Spins, and looks every 100,000 turns whether this script still runs:
    # a run killed before its exit trap leaves no loop behind.
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do for ((j = 0; j < 100000; j++)); do :; done; done' \
      busy "$$" </dev/null >/dev/null 2>&1 &
    busy_pids+=("$!")
  done
  log "GROUPCOORD_TEST_BUSY=$n: CPU-bound loops beside the tests, PIDs ${busy_pids[*]}"
}
stop_busy() {
  [ ${#busy_pids[@]} -gt 0 ] || return 0
  kill "${busy_pids[@]}" 2>/dev/null || true
  wait "${busy_pids[@]}" 2>/dev/null || true
  log "busy loops stopped (PIDs ${busy_pids[*]})"
  busy_pids=()
}

# Every "[figure] ..." line the tests printed (measures of speed, which they
# report and do not assert), in one file for a report to read.
gather_figures() {
  local log=$1 out=$2
  [ -f "$log" ] || return 0
  grep -h '^\[figure\]' "$log" >"$out" 2>/dev/null || true
  log "$(wc -l <"$out") figure line(s) in $out"
}

cmd=${1:-}
[ $# -gt 0 ] && shift

case "$cmd" in
  setup)
    setup
    ;;
  build)
    setup
    build
    ;;
  generate)
    setup
    build --target groupcoord-options groupcoord-messages
    "$build_dir/server/groupcoord-options" --write "$root"
    "$build_dir/protocol/groupcoord-messages" --write "$root"
    ;;
  run)
    setup
    build
    export GROUPCOORD_ZK_BASE_PORT=${GROUPCOORD_ZK_BASE_PORT:-2180}
    export GROUPCOORD_ZK_TICK_MS=${GROUPCOORD_ZK_TICK_MS:-2000}
    ensemble="$root/scripts/zk-ensemble.sh"
    "$ensemble" start
    connect=$("$ensemble" connect)
    trap '"$ensemble" stop; log "ensemble stopped"' EXIT
    server="$build_dir/server/groupcoordd"
    if [ -x "$server" ]; then
      log "running groupcoordd against $connect, Kafka clients on 127.0.0.1:9092 (Ctrl-C stops it and the ensemble)"
      "$server" --zk-connect="$connect" --listen-address=127.0.0.1 --kafka-listen-port=9092 "$@"
    else
      log "groupcoordd is not built yet: the ensemble serves at $connect; Ctrl-C stops it"
      while true; do sleep 3600; done
    fi
    ;;
  test)
    setup
    build
    # Before the ensemble starts: its JVMs need not sit beside a compile of
    # everything.
    tsa_build=${GROUPCOORD_THREAD_SAFETY_BUILD:-$([ $# -eq 0 ] && echo 1 || echo 0)}
    tsa_rc=0
    if [ "$tsa_build" != 0 ]; then
      "$root/scripts/thread-safety.sh" || { log "the thread-safety build FAILED"; tsa_rc=1; }
    fi
    start_busy "${GROUPCOORD_TEST_BUSY:-0}"
    export GROUPCOORD_ZK_BASE_PORT=${GROUPCOORD_ZK_BASE_PORT:-21800}
    export GROUPCOORD_ZK_TICK_MS=${GROUPCOORD_ZK_TICK_MS:-500}
    ensemble="$root/scripts/zk-ensemble.sh"
    trap 'stop_busy; "$ensemble" stop; log "test ensemble stopped"' EXIT
    "$ensemble" start
    export GROUPCOORD_TEST_ZK
    GROUPCOORD_TEST_ZK=$("$ensemble" connect)
    log "running ctest against the ensemble at $GROUPCOORD_TEST_ZK"
    rc=0
    (cd "$build_dir" && ctest --output-on-failure --timeout 600 "$@") || rc=$?
    fuzz_seconds=${GROUPCOORD_FUZZ_SECONDS:-$([ $# -eq 0 ] && echo 60 || echo 0)}
    if [ "$fuzz_seconds" != 0 ]; then
      "$root/scripts/fuzz.sh" "$fuzz_seconds" || { log "the codec fuzzer FAILED"; rc=1; }
    fi
    if [ $tsa_rc -ne 0 ]; then
      log "the thread-safety build FAILED (log: ${TSA_BUILD_DIR:-$root/build-tsa}/build.log)"
      rc=1
    fi
    gather_figures "$build_dir/Testing/Temporary/LastTest.log" "$build_dir/Testing/figures.txt"
    if [ $rc -ne 0 ]; then
      failure_digest "$build_dir/Testing/Temporary/LastTest.log"
      log "tests FAILED (ctest exit code $rc); ZooKeeper logs: /tmp/groupcoord-zk-$GROUPCOORD_ZK_BASE_PORT/node*/logs"
    else
      log "all tests passed"
    fi
    exit $rc
    ;;
  tsa)
    setup
    exec "$root/scripts/thread-safety.sh" "$@"
    ;;
  -h|--help|help|"")
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    [ -n "$cmd" ] || exit 2
    ;;
  *)
    echo "dev.sh: unknown command '$cmd' (run, test, setup, build, tsa)" >&2
    exit 2
    ;;
esac
