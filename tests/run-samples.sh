#!/bin/bash
# run-samples.sh FGC SOURCE_DIR BUILD_DIR - every samples/*.fg must
#  1. pass `fgc check` at its default (benchmark) sizes;
#  2. run in the reference interpreter at the small sizes of its
#     `# test-dims: -D NAME=VALUE ...` line, inputs drawn from --seed, and
#     write a non-empty NAME.npy for each name of its `output` line and a
#     saved.NAME.npy for each `NAME = ... @save` statement;
#  3. write byte-identical files when run again with the same seed.
# One PASS/FAIL line per sample, then a total.
set -u
fgc=$1 src=$2 build=$3
tmp=$(mktemp -d "${build%/}/samples.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/no-inputs"
pass=0 fail=0

for fg in "$src"/samples/*.fg; do
	name=$(basename "$fg" .fg) log=$tmp/$name.log
	read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
	read -ra outs < <(sed -n 's/#.*//; s/^[[:space:]]*output[[:space:]]//p' "$fg" | tr ',' ' ')
	read -ra saved < <(sed -n 's/#.*//; s/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*=.*@save.*/saved.\1/p' "$fg" | tr '\n' ' ')
	why=""
	if [ "${#dims[@]}" -eq 0 ] || [ "${#outs[@]}" -eq 0 ]; then
		why="no '# test-dims:' line or no 'output' line"
	elif ! "$fgc" check "$fg" >"$log" 2>&1; then
		why="fgc check failed at the default sizes"
	else
		for run in a b; do
			"$fgc" run "$fg" --inputs "$tmp/no-inputs" --draw-missing --outputs "$tmp/$name.$run" \
				--seed 7 "${dims[@]}" >"$log" 2>&1 || { why="fgc run ${dims[*]} failed"; break; }
		done
		for o in "${outs[@]}" "${saved[@]}"; do
			[ -n "$why" ] || [ -s "$tmp/$name.a/$o.npy" ] || why="no non-empty $o.npy written"
		done
		[ -n "$why" ] || diff -r "$tmp/$name.a" "$tmp/$name.b" >"$log" 2>&1 ||
			why="two runs with --seed 7 wrote different files"
	fi
	if [ -n "$why" ]; then
		echo "FAIL $name: $why"; sed 's/^/    /' "$log" | head -n 20; fail=$((fail + 1))
	else
		echo "PASS $name"; pass=$((pass + 1))
	fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
