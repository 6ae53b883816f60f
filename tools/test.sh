#!/usr/bin/env bash
# The whole test suite: builds (installing what is missing) and runs ctest.
# With --sanitize it does the same in build-asan with ASan and UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
args=()
if [ "${1:-}" = --sanitize ]; then
  build=build-asan
  args=(-DFG_SANITIZE=ON)
fi
[ -n "${FG_WERROR:-}" ] && args+=(-DFG_WERROR=ON)
tools/setup.sh "$build" "${args[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" | tee "$log" || rc=$?
# a runner that could not run (tests/lib.sh skip) is never a pass: say so
n=$(grep -c '\*\*\*Skipped' "$log" || true)
names=$({ grep '\*\*\*Skipped' "$log" || true; } | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/' | tr '\n' ' ')
echo "tools/test.sh: $n skipped${names:+: $names}"
exit "$rc"
