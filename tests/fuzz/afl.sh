#!/usr/bin/env bash
# AFL++ on the three libFuzzer targets (fuzz_fg.c, fuzz_npy.c, fuzz_json.c), as a second
# fuzzer beside run.sh's libFuzzer: its mutations and scheduling differ, so
# it reaches inputs the other does not.  Builds the targets with
# afl-clang-fast, whose -fsanitize=fuzzer links AFL++'s libFuzzer driver
# (libAFLDriver, persistent mode, shared-memory input), instrumented with
# ASan and UBSan as run.sh's are (CMake's FG_FUZZ, CC=afl-clang-fast), and
# runs afl-fuzz on each for SECONDS with run.sh's seed corpus (seeds.sh)
# and dictionary.  Limits as run.sh's: a run over 25 s is a hang (-t), an
# allocation or a resident size over 2560 MB a crash (ASan's
# max_allocation_size_mb and hard_rss_limit_mb, since afl-fuzz's own -m
# cannot work with ASan's shadow memory).  Leaks are left to run.sh: in
# persistent mode LeakSanitizer runs once at exit, for the whole run.
#
# Findings stay in BUILD/afl-TARGET/default/{crashes,hangs} and fail the
# run; each replays (with a stack) under the libFuzzer build:
#   build-fuzz/tests/fuzz_fg BUILD/afl-fg/default/crashes/id:000000,...
# afl++ is installed from the distribution when missing.
# Usage: tests/fuzz/afl.sh SECONDS [BUILD]   (from anywhere; BUILD: build-afl)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
build=${2:-build-afl}
if ! command -v afl-clang-fast >/dev/null || ! command -v afl-fuzz >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq afl++ >/dev/null
fi
export AFL_QUIET=1
CC=afl-clang-fast cmake -S . -B "$build" -DFG_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_fg fuzz_npy fuzz_json -j "$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bash tests/fuzz/seeds.sh "$work"
# afl-fuzz wants these exactly: abort on a report, no symbolizer.
export ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0:max_allocation_size_mb=2560:hard_rss_limit_mb=2560:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:symbolize=0
# A shared machine: no core pinning, no CPU-governor or core-dump checks.
export AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
# The three side by side, a core each.
for t in fg npy json; do
  rm -rf "$build/afl-$t"
  echo "afl_$t: $(ls "$work/$t" | wc -l) seeds, ${secs}s"
  afl-fuzz -i "$work/$t" -o "$build/afl-$t" -x "tests/fuzz/$t.dict" -m none -t 25000 -V "$secs" \
    -- "$build/tests/fuzz_$t" >"$build/afl_$t.log" 2>&1 &
done
wait
stat() { sed -n "s/^$1 *: *//p" "$stats"; }
status=0
for t in fg npy json; do
  out=$build/afl-$t
  stats=$out/default/fuzzer_stats
  if ! grep -qs "^execs_done" "$stats"; then
    echo "FAIL afl_$t: afl-fuzz stopped:"; tail -20 "$build/afl_$t.log"; status=1; continue
  fi
  echo "afl_$t: $(stat execs_done) execs ($(stat execs_per_sec)/s), $(stat corpus_count) in the queue," \
       "$(stat bitmap_cvg) of the map, $(stat saved_crashes) crashes, $(stat saved_hangs) hangs"
  if [ "$(stat saved_crashes)" != 0 ] || [ "$(stat saved_hangs)" != 0 ]; then
    echo "FAIL afl_$t: findings in $out/default/crashes and hangs"; status=1
  fi
done
[ "$status" -eq 0 ] && echo "afl: 2 passed, 0 failed" || echo "afl: 0 passed, 2 failed"
exit $status
