#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for
# SECONDS on a seed corpus made of the committed corpus, the samples and
# every test .fg (and the golden .npy inputs, the timings of
# tests/measured), with the dictionaries.
# A crash, hang (-timeout=25), leak or sanitizer report fails the run and
# leaves the input in BUILD/fuzz-artifacts/.  With SECONDS=0 it only
# replays the corpus.
# Usage: tests/fuzz/run.sh SECONDS [BUILD]   (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
build=${2:-build-fuzz}
if ! command -v clang >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
     clang -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang libclang-rt-dev >/dev/null
fi
CC=clang cmake -S . -B "$build" -DFG_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_fg fuzz_npy fuzz_json -j "$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/fuzz-artifacts"
bash tests/fuzz/seeds.sh "$work"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for t in fg npy json; do
  echo "fuzz_$t: $(ls "$work/$t" | wc -l) seeds, ${secs}s"
  args=(-timeout=25 -rss_limit_mb=2560 -dict="tests/fuzz/$t.dict" -artifact_prefix="$build/fuzz-artifacts/$t-"
        -print_final_stats=1)
  if [ "$secs" -gt 0 ]; then args+=(-max_total_time="$secs"); else args+=(-runs=0); fi
  if ! "$build/tests/fuzz_$t" "${args[@]}" "$work/$t" >"$build/fuzz_$t.log" 2>&1; then
    echo "FAIL fuzz_$t:"; tail -40 "$build/fuzz_$t.log"; status=1
  else
    grep -E "^stat::number_of_executed_units|cov:" "$build/fuzz_$t.log" | tail -2
  fi
done
[ "$status" -eq 0 ] && echo "fuzzing: 3 passed, 0 failed" || echo "fuzzing: some of 3 failed"
exit $status
