#!/bin/bash
# run-interp.sh FGC SOURCE_DIR BUILD_DIR - golden tests of the reference
# interpreter.  Each tests/golden/interp/CASE.fg runs as
#   fgc run CASE.fg --inputs CASE/in --outputs TMP/CASE
# and every CASE/expect/*.npy must match what it wrote (npycmp.py, with the
# case's `# tol: rtol=R atol=A` line if it has one), with no other file
# written.  First, the committed goldens must be exactly what
# gen_interp_goldens.py writes.  One PASS/FAIL line per case, then a total.
set -u
fgc=$1 src=$2 build=$3
py=${PYTHON:-/usr/bin/python3}
gold=$src/tests/golden
tmp=$(mktemp -d "${build%/}/interp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/out" "$tmp/log"
pass=0 fail=0

. "$src/tests/lib.sh"
need_numpy
"$py" "$gold/gen_interp_goldens.py" --check >"$tmp/gen.log" 2>&1 && : >"$tmp/gen.log"
verdict gen_interp_goldens--check "$tmp/gen.log"

for fg in "$gold"/interp/*.fg; do
	name=$(basename "$fg" .fg)
	"$fgc" run "$fg" --inputs "$gold/interp/$name/in" --outputs "$tmp/out/$name" \
		>"$tmp/log/$name" 2>&1 || echo "fgc run exited with status $?" >>"$tmp/log/$name"
done
# One process compares every case; its lines read "CASE: FILE: problem",
# and any other line (a traceback) fails the comparison itself.
"$py" "$gold/npycmp.py" --cases "$gold/interp" "$tmp/out" >"$tmp/cmp.log" 2>&1
grep -vE '^[a-z0-9-]+: ' "$tmp/cmp.log" >"$tmp/npycmp.log"
verdict npycmp.py--cases "$tmp/npycmp.log"
for fg in "$gold"/interp/*.fg; do
	name=$(basename "$fg" .fg) log=$tmp/log/$name
	# fgc's own messages count only when it failed; else the comparison's.
	grep -q '^fgc run exited' "$log" ||
		awk -v p="$name: " 'index($0, p) == 1' "$tmp/cmp.log" >"$log"
	verdict "$name" "$log"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
