#!/usr/bin/env bash
# Fusion tests: each tests/fuse/*.fg states the plan it must get (groups,
# kinds, boundary reasons, side outputs, or a fuse { } error), and so does
# each tests/gpu/*.fg with an `# expect:` line (the GPU check compares
# values, not plans: a pattern that stops fusing would pass it); every sample
# gets a well-formed report and matches its committed text report in
# tests/fuse/samples/ (regenerate with --update after reviewing the diff).
# Usage: bash tests/run-fuse.sh FGC SOURCE_DIR BUILD_DIR [--update]
set -u
fgc=$1 src=$2
update=${4:-}
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
count() { if [ "$1" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi; }

cd "$src" || exit 1
for t in tests/fuse/*.fg $(grep -l '^# expect:' tests/gpu/*.fg); do
  "$py" tests/fuse/check_report.py "$fgc" "$t"
  count $?
done
for s in samples/*.fg; do
  name=$(basename "$s" .fg)
  golden=tests/fuse/samples/$name.report
  for fmt in text json dot; do
    if ! "$fgc" report --format "$fmt" "$s" >"$tmp/$name.$fmt" 2>"$tmp/err"; then
      echo "FAIL $s --format $fmt:"; cat "$tmp/err"; count 1; continue 2
    fi
  done
  "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/$name.json" || { echo "FAIL $s: bad JSON"; count 1; continue; }
  if [ "$update" = --update ]; then
    cp "$tmp/$name.text" "$golden"
  fi
  if diff -u "$golden" "$tmp/$name.text" >"$tmp/diff"; then
    echo "PASS $s"; count 0
  else
    echo "FAIL $s: the report differs from $golden:"; head -40 "$tmp/diff"; count 1
  fi
  if command -v dot >/dev/null && ! dot -Tsvg "$tmp/$name.dot" -o /dev/null 2>"$tmp/err"; then
    echo "FAIL $s: dot -Tsvg:"; cat "$tmp/err"; count 1
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
