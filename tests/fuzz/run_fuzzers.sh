#!/usr/bin/env bash
# Runs the libFuzzer targets of a DIX_FUZZ=ON build (docs/operations.md, "Fuzzing") for a bounded
# time each, one after the other, on a copy of corpus/<target>/ and regressions/<target>/ in a
# temporary directory, so nothing is written into the tree. Prints each target's executions and
# exec/s; exits 1 if any target crashed, leaked, hung or tripped a sanitizer, after copying its
# artifacts (the input that failed) to BUILD_DIR/fuzz-artifacts/<target>/ — add that file to
# tests/fuzz/regressions/<target>/ once the decoder is fixed.
#   usage: tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_EACH (30)] [TARGET...]
set -euo pipefail
build=$(cd "${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS_EACH] [TARGET...]}" && pwd)
seconds=${2:-30}
shift $(($# < 2 ? $# : 2))
source_dir=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(cursor txn_header wal_batch segment metrics_segment meta_records messages)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dix-fuzz-XXXXXX")
trap 'rm -rf "$work"' EXIT
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$source_dir/../ubsan.supp"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"

failed=0
for target in "${targets[@]}"; do
  binary="$build/bin/fuzz_$target"
  if [ ! -x "$binary" ]; then
    echo "fuzz: $binary is missing (configure with -DDIX_FUZZ=ON and build --target dix_fuzz)" >&2
    exit 1
  fi
  mkdir -p "$work/$target/corpus" "$work/$target/artifacts"
  cp -R "$source_dir/corpus/$target/." "$source_dir/regressions/$target/." "$work/$target/corpus/"
  max_len=4096
  [ "$target" = segment ] && max_len=8320  # a default segment: 128 + 64 × 128 bytes
  if "$binary" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" "$work/$target/corpus" \
       >"$work/$target/log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target/log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$target/log")
    echo "fuzz: $target ran ${seconds}s: $runs executions, $rate exec/s, no failure"
  else
    failed=1
    echo "fuzz: $target FAILED; the end of its log:" >&2
    tail -n 60 "$work/$target/log" >&2
    mkdir -p "$build/fuzz-artifacts/$target"
    cp -R "$work/$target/artifacts/." "$build/fuzz-artifacts/$target/"
    echo "fuzz: the failing input is in $build/fuzz-artifacts/$target/" >&2
  fi
done
exit "$failed"
