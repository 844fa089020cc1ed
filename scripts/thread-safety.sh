#!/usr/bin/env bash
# Builds everything (servers, client, tests, benchmarks) with Clang's
# thread-safety analysis, -Wthread-safety -Werror=thread-safety
# (GROUPCOORD_THREAD_SAFETY=ON): exits non-zero if any code breaks the
# locking rules its annotations state (GUARDED_BY, REQUIRES, EXCLUDES; see
# common/Sync.h), or if the build fails for any other reason.
#
#   scripts/thread-safety.sh [cmake --build options...]
#       e.g. --target groupcoord_zk groupcoord_metrics to check only those
#
# It configures a Clang Debug build (-O0, no debug info: nothing built here
# is run) in TSA_BUILD_DIR (default build-tsa) and builds every target with
# JOBS jobs (default: number of cores). Nothing is run. The build log is kept
# in TSA_BUILD_DIR/build.log; the thread-safety diagnostics are repeated at
# the end of the output.
#
# Environment: TSA_BUILD_DIR, JOBS.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${TSA_BUILD_DIR:-$root/build-tsa}
jobs=${JOBS:-$(nproc)}

log() { printf '\033[1m[tsa]\033[0m %s\n' "$*" >&2; }

command -v clang++ >/dev/null || { echo "thread-safety.sh: clang++ is missing (apt-get install clang)" >&2; exit 1; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

log "configuring a clang build with -Wthread-safety in $build_dir"
mkdir -p "$build_dir"
if ! CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DGROUPCOORD_THREAD_SAFETY=ON -DGROUPCOORD_BUILD_TESTS=ON -DGROUPCOORD_BUILD_BENCH=ON -DBUILD_TESTING=ON \
    "${launcher[@]}" > "$build_dir/configure.log" 2>&1; then
  cat "$build_dir/configure.log" >&2
  log "FAILED to configure (log: $build_dir/configure.log)"
  exit 1
fi

# Keep going past a failing file, so one run reports every file that
# breaks the rules, not only the first.
keep_going=(-k)
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build_dir/CMakeCache.txt" && keep_going=(-k 0)

log "building with $jobs jobs${*:+ ($*)}"
start=$SECONDS
rc=0
cmake --build "$build_dir" -j "$jobs" "$@" -- "${keep_going[@]}" 2>&1 | tee "$build_dir/build.log" || rc=$?
elapsed=$((SECONDS - start))

# The diagnostics, not the command lines (which carry the flags): with
# -Werror=thread-safety they read "[-Werror,-Wthread-safety-analysis]"; a
# plain warning (a target that turned the error off) fails the run too.
diagnostic='\[(-Werror,)?-Wthread-safety[a-z-]*\]'
if grep -qE -- "$diagnostic" "$build_dir/build.log"; then
  log "thread-safety violations:"
  grep -E -- "$diagnostic" "$build_dir/build.log" | sort -u >&2
  rc=1
fi
if [ "$rc" -ne 0 ]; then
  log "FAILED after ${elapsed}s (log: $build_dir/build.log)"
  exit 1
fi
log "no thread-safety violation (${elapsed}s)"
