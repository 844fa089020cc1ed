#!/usr/bin/env bash
# Fuzzes the wire codec (the frame reader, every request and response
# decoder) with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer
# for a bounded time; exits non-zero if the fuzzer finds a crash, a leak, a
# timeout, undefined behaviour or a round trip that does not hold.
#
#   scripts/fuzz.sh [SECONDS]      default 60
#
# It configures a clang build with only what the fuzzer needs in
# FUZZ_BUILD_DIR (default build-fuzz), builds groupcoord_fuzz_request and
# the seed writer, and runs the fuzzer on the committed corpus
# (protocol/fuzz/corpus/) plus seeds made from the codec tests' samples.
# New inputs go to a scratch directory, never into the source tree. A
# crashing input is kept in FUZZ_BUILD_DIR/fuzz-artifacts/ and printed in
# hex: add it to protocol/fuzz/corpus/ as regression-<what> and to a unit
# test in tests/protocol/ once fixed.
#
# Environment: FUZZ_BUILD_DIR, FUZZ_RSS_LIMIT_MB (default 2048), JOBS.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
rss_limit=${FUZZ_RSS_LIMIT_MB:-2048}
jobs=${JOBS:-$(nproc)}

log() { printf '\033[1m[fuzz]\033[0m %s\n' "$*" >&2; }

case "$seconds" in
  ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

log "configuring a clang build in $build_dir"
mkdir -p "$build_dir"
if ! CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGROUPCOORD_FUZZ=ON -DGROUPCOORD_BUILD_TESTS=OFF -DGROUPCOORD_BUILD_BENCH=OFF "${launcher[@]}" \
    > "$build_dir/configure.log" 2>&1; then
  cat "$build_dir/configure.log" >&2
  exit 1
fi
log "building the fuzz target"
cmake --build "$build_dir" -j "$jobs" --target groupcoord_fuzz_request groupcoord_fuzz_seeds

work=$(mktemp -d "${TMPDIR:-/tmp}/groupcoord-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/new" "$work/seeds" "$work/artifacts"
"$build_dir/protocol/groupcoord_fuzz_seeds" "$work/seeds" >/dev/null

log "fuzzing for $seconds s (rss limit $rss_limit MB)"
rc=0
"$build_dir/protocol/groupcoord_fuzz_request" \
  -max_total_time="$seconds" -rss_limit_mb="$rss_limit" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" \
  "$work/new" "$root/protocol/fuzz/corpus" "$work/seeds" > "$work/fuzz.log" 2>&1 || rc=$?

grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added)' \
  "$work/fuzz.log" >&2 || true
shopt -s nullglob
artifacts=("$work"/artifacts/*)
if [ $rc -ne 0 ] || [ ${#artifacts[@]} -gt 0 ]; then
  tail -n 60 "$work/fuzz.log" >&2
  mkdir -p "$build_dir/fuzz-artifacts"
  for a in "${artifacts[@]}"; do
    cp "$a" "$build_dir/fuzz-artifacts/"
    log "input that failed: $build_dir/fuzz-artifacts/$(basename "$a")"
    od -A d -t x1 "$a" | head -n 20 >&2
  done
  log "FAILED (fuzzer exit code $rc)"
  exit 1
fi
log "no crash in $seconds s"
