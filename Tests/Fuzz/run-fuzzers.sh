#!/usr/bin/env bash
# Runs every libFuzzer target of data4help-fuzz for a bounded time and prints how many inputs
# each executed. A crash, a trap or an input slower than 10 s fails the run; its input is copied
# into Tests/Fuzz/regressions/<target>/ so that, once committed, the test suite replays it forever
# (FuzzCorpusTests).
#
#   Tests/Fuzz/run-fuzzers.sh FUZZER_BINARY SECONDS_PER_TARGET
set -euo pipefail
binary=$1
seconds=${2:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
work="$root/.build/fuzz-work"
targets=(upload cursor aggregate gpx tcx fit form timestamp signature health-export coded-body)
failed=0
printf '%-10s %12s %8s %8s  %s\n' target executions exec/s corpus result
for target in "${targets[@]}"; do
  mkdir -p "$work/$target" "$work/artifacts" "$root/Tests/Fuzz/regressions/$target"
  log="$work/$target.log"
  status=0
  # SWIFT_BACKTRACE off: libFuzzer's own handler must see the trap to save the input.
  FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no "$binary" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" "$work/$target" "$root/Tests/Fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(find "$work/$target" -type f | wc -l)
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    failed=1
    result="FAILED (exit $status)"
    for artifact in "$work/artifacts/$target-"*; do
      [ -e "$artifact" ] || continue
      cp "$artifact" "$root/Tests/Fuzz/regressions/$target/"
      result="$result: $(basename "$artifact") kept in Tests/Fuzz/regressions/$target/"
    done
    grep -m1 -E 'Fatal error|ERROR: libFuzzer|SUMMARY' "$log" || true
  fi
  printf '%-10s %12s %8s %8s  %s\n' "$target" "$runs" "$rate" "$corpus" "$result"
done
if [ "$failed" -ne 0 ]; then
  echo "fuzzing found inputs that crash a decoder (logs in $work)"
  exit 1
fi
