#!/usr/bin/env bash
# Fuzzes the wire codecs with libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer for a bounded time: groupcoord's protocol (the
# frame reader, every request and response decoder) and the Kafka port's
# (the request decoder, every response decoder); exits non-zero if either
# fuzzer finds a crash, a leak, a timeout, undefined behaviour, an
# allocation beyond its limit or a round trip that does not hold.
#
#   scripts/fuzz.sh [SECONDS]      default 60, split between the two targets
#
# The first target gets the larger half (SECONDS+1)/2, the Kafka target the
# rest; a share of 0 s skips that target (libFuzzer reads 0 as "no limit").
# It configures a clang build with only what the fuzzers need in
# FUZZ_BUILD_DIR (default build-fuzz), builds groupcoord_fuzz_request,
# groupcoord_fuzz_kafka_request and their seed writers, and runs each fuzzer
# on its committed corpus (protocol/fuzz/corpus/, protocol/fuzz/kafka-corpus/)
# plus seeds made from the codec tests' samples.
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
log "building the fuzz targets"
cmake --build "$build_dir" -j "$jobs" --target groupcoord_fuzz_request groupcoord_fuzz_seeds \
  groupcoord_fuzz_kafka_request groupcoord_fuzz_kafka_seeds

work=$(mktemp -d "${TMPDIR:-/tmp}/groupcoord-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run NAME TARGET SEED_WRITER CORPUS SECONDS [libFuzzer options...]: one
# fuzzer for its share of the time; returns non-zero on any finding.
run() {
  local name=$1 target=$2 seeder=$3 corpus=$4 share=$5
  shift 5
  local dir="$work/$name"
  mkdir -p "$dir/new" "$dir/seeds" "$dir/artifacts"
  "$build_dir/protocol/$seeder" "$dir/seeds" >/dev/null

  log "$name: fuzzing for $share s (rss limit $rss_limit MB)"
  local rc=0
  "$build_dir/protocol/$target" \
    -max_total_time="$share" -rss_limit_mb="$rss_limit" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$@" \
    "$dir/new" "$root/protocol/fuzz/$corpus" "$dir/seeds" > "$dir/fuzz.log" 2>&1 || rc=$?

  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added)' \
    "$dir/fuzz.log" >&2 || true
  shopt -s nullglob
  local artifacts=("$dir"/artifacts/*)
  if [ $rc -ne 0 ] || [ ${#artifacts[@]} -gt 0 ]; then
    tail -n 60 "$dir/fuzz.log" >&2
    mkdir -p "$build_dir/fuzz-artifacts"
    for a in "${artifacts[@]}"; do
      cp "$a" "$build_dir/fuzz-artifacts/$name-$(basename "$a")"
      log "input that failed: $build_dir/fuzz-artifacts/$name-$(basename "$a")"
      od -A d -t x1 "$a" | head -n 20 >&2
    done
    log "$name: FAILED (fuzzer exit code $rc)"
    return 1
  fi
  log "$name: no crash in $share s"
}

first=$(( (seconds + 1) / 2 ))
second=$(( seconds - first ))
failed=0
if [ "$first" -gt 0 ]; then
  run groupcoord groupcoord_fuzz_request groupcoord_fuzz_seeds corpus "$first" || failed=1
fi
# A Kafka request of at most -max_len bytes holds no count that needs more
# than a few hundred KiB: a larger single allocation was sized by the sender.
if [ "$second" -gt 0 ]; then
  run kafka groupcoord_fuzz_kafka_request groupcoord_fuzz_kafka_seeds kafka-corpus "$second" \
    -malloc_limit_mb=16 || failed=1
fi
[ $failed -eq 0 ] || exit 1
log "no crash in $seconds s"
