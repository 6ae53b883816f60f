#!/bin/bash
# run-plan.sh FGC SOURCE_DIR BUILD_DIR - fusion plans checked on the CPU.
# Every tests/golden/interp/*.fg, and every samples/*.fg at the sizes of
# its `# test-dims: -D NAME=VALUE ...` line, runs as
#   fgc verify FILE            (the fused plan)
#   fgc verify --no-fuse FILE  (one group per op)
#   fgc verify --precision kernel FILE  (the fused plan in f32 arithmetic)
# which executes the plan group by group in the reference interpreter,
# rounding each value it writes to its dtype, and compares every output and
# saved value with the op-by-op evaluation.  PASS when it exits 0.  Then
# the oracle's own test (issue 19): with each bug of `--plant element|row|
# column|tile` put into the fused plan's values, every value compared must
# FAIL, elementwise and RMSE-gated alike.  tests/gpu/*.fg join the samples
# (at their test dims where they give some), except those whose `# cpu:`
# line says why the CPU cannot hold them.
# One PASS/FAIL line per file and plan, then a total.
set -u
fgc=$1 src=$2 build=$3
tmp=$(mktemp -d "${build%/}/plan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# check NAME FILE FLAGS...: one verdict for `fgc verify FLAGS FILE`.
check() {
	local name=$1 fg=$2 log=$tmp/$BASHPID.log
	shift 2
	if "$fgc" verify "$@" "$fg" >"$log" 2>&1; then
		echo "PASS $name"
	else
		echo "FAIL $name (exit $?)"; grep -v '^ok ' "$log" | sed 's/^/    /' | head -n 20
	fi
}

# caught NAME FILE FLAGS...: every value of `fgc verify --plant KIND
# FLAGS FILE` fails, for each KIND.
caught() {
	local name=$1 fg=$2 log=$tmp/$BASHPID.log kind n bad
	shift 2
	for kind in element row column tile; do
		"$fgc" verify --plant "$kind" "$@" "$fg" >"$log" 2>/dev/null
		n=$(grep -Ec '^(ok|FAIL) ' "$log") bad=$(grep -c '^FAIL ' "$log")
		if [ "$n" -gt 0 ] && [ "$bad" -eq "$n" ]; then
			echo "PASS $name --plant $kind: $bad of $n values caught"
		else
			echo "FAIL $name --plant $kind: $bad of $n values caught"; grep '^ok ' "$log" | sed 's/^/    /' | head -n 20
		fi
	done
}

# one K FILE: every verdict of FILE, into $tmp/K.res (files side by side,
# as many as there are CPUs: one at a time this was CI's longest test)
one() {
	local k=$1 fg=$2 name dims=()
	name=$(basename "$fg" .fg)
	exec >"$tmp/$k.res" 2>&1
	case $fg in
	"$src"/tests/gpu/*)
		name=gpu/$name
		if grep -q '^# cpu:' "$fg"; then
			echo "SKIP $name:$(sed -n 's/^# cpu://p' "$fg")"
			return
		fi
		read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
		;;
	"$src"/samples/*)
		name=samples/$name
		read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
		if [ "${#dims[@]}" -eq 0 ]; then
			echo "FAIL $name: no '# test-dims:' line"
			return
		fi
		;;
	esac
	check "$name" "$fg" "${dims[@]}"
	check "$name --no-fuse" "$fg" --no-fuse "${dims[@]}"
	check "$name --precision kernel" "$fg" --precision kernel "${dims[@]}"
	caught "$name" "$fg" "${dims[@]}"
}
export -f check caught one
export fgc src tmp

files=("$src"/tests/golden/interp/*.fg "$src"/samples/*.fg "$src"/tests/gpu/*.fg)
for k in "${!files[@]}"; do
	printf '%05d %s\n' "$k" "${files[$k]}"
done | xargs -P "$(nproc)" -L 1 bash -c 'one "$0" "$1"; echo END >>"$tmp/$0.res"'
cat "$tmp"/*.res | grep -vx END >"$tmp/all"
cat "$tmp/all"
pass=$(grep -c '^PASS ' "$tmp/all") fail=$(grep -c '^FAIL ' "$tmp/all")
# a file whose job ended before all its verdicts (killed: no END after
# them) is a failure, not a silence
for k in "${!files[@]}"; do
	if ! grep -qx END "$tmp/$(printf '%05d' "$k").res" 2>/dev/null; then
		echo "FAIL ${files[$k]}: its job did not finish (not run, or killed before all its verdicts)"; fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
