#!/bin/bash
# run-leaks.sh FGC SOURCE_DIR BUILD_DIR - fgc under Valgrind's memcheck
# (issue 5: "Valgrind or LeakSanitizer finds no leak in fgc").
#
# A representative subset, each run once under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect,possible
# - every sample: check and report at its default sizes, run at the sizes
#   of its `# test-dims:` line;
# - verify on five samples at their test dims;
# - 30 of tests/diag/*.fg, every ~N-th of the sorted list (check, or
#   report for an expect-report file), which must fail with status 1;
# - 10 of tests/npy/*.npy given to `fgc run` as its input x, rejected or
#   accepted as tests/npy/cases.txt says.
# A case fails on any memcheck error or leak, or on an exit status other
# than the expected one.  Valgrind's own --error-exitcode is 99, not 1,
# because fgc exits with 1 for every diagnostic; its log is checked too.
# Cases run two at a time (or one per CPU, up to four).
#
# Without valgrind (or for a sanitizer build, which Valgrind cannot run)
# it is skipped: exit status 77, Skipped in ctest.
# One PASS/FAIL line per case, then a total.
set -u

# Internal: --job ID DIR STATUS ARGS... runs one case and writes
# $LEAKS_TMP/ID.result, a one-line verdict.
if [ "${1:-}" = --job ]; then
	id=$2 dir=$3 want=$4
	shift 4
	log=$LEAKS_TMP/$id.vg
	(cd "$dir" && exec timeout -k 5 300 valgrind -q --leak-check=full \
		--show-leak-kinds=definite,indirect,possible \
		--errors-for-leak-kinds=definite,indirect,possible \
		--error-exitcode=99 --log-file="$log" "$LEAKS_FGC" "$@") \
		>"$LEAKS_TMP/$id.out" 2>"$LEAKS_TMP/$id.err"
	rc=$?
	why=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="took more than 300 s under valgrind"
	elif [ "$rc" -eq 99 ] || grep -qE 'ERROR SUMMARY: [1-9]|definitely lost|indirectly lost|possibly lost|Invalid (read|write)' "$log"; then
		why="valgrind: $(grep -m 3 -E 'lost|Invalid|uninitialised|ERROR SUMMARY' "$log" | sed 's/^==[0-9]*== //' | tr '\n' ';')"
	elif [ "$rc" -ne "$want" ]; then why="exit status $rc, expected $want"
	fi
	printf '%s\n' "$why" >"$LEAKS_TMP/$id.result"
	exit 0
fi

fgc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2 build=$3
. "$src/tests/lib.sh"
command -v valgrind >/dev/null 2>&1 ||
	skip "valgrind is not installed; the leak check did not run (Debian: apt-get install valgrind)"
if grep -aqE '__(asan|ubsan|msan|tsan)_' "$fgc"; then
	skip "$fgc is built with sanitizers, which Valgrind cannot run; the leak check did not run"
fi
tmp=$(mktemp -d "${build%/}/leaks.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export LEAKS_TMP=$tmp LEAKS_FGC=$fgc

# The jobs: one line each, ID, DIR, expected status, then fgc's arguments,
# separated by tabs.
jobs=$tmp/jobs
: >"$jobs"
n=0
job() {
	n=$((n + 1))
	local id
	id=$(printf '%03d' "$n")
	names[$n]=$1
	shift
	(IFS=$'\t'; printf '%s\t%s\n' "$id" "$*") >>"$jobs"
}
declare -a names

for s in "$src"/samples/*.fg; do
	base=$(basename "$s" .fg)
	read -ra dims < <(sed -n 's/^# test-dims://p' "$s")
	job "sample/$base check" "$src" 0 check "$s"
	job "sample/$base report" "$src" 0 report "$s"
	mkdir -p "$tmp/in-none"
	job "sample/$base run ${dims[*]}" "$src" 0 run "$s" --inputs "$tmp/in-none" --draw-missing \
		--outputs "$tmp/out-$base" --seed 7 "${dims[@]}"
done
for base in attn_bf16 layernorm_f16 mlp_bf16 normalize_global_f32 gemm_bias_gelu_bf16; do
	s=$src/samples/$base.fg
	read -ra dims < <(sed -n 's/^# test-dims://p' "$s")
	job "verify/$base ${dims[*]}" "$src" 0 verify "$s" --seed 7 "${dims[@]}"
done

mapfile -t diags < <(cd "$src/tests/diag" && ls -1 -- *.fg | LC_ALL=C sort)
step=$(( ${#diags[@]} / 30 ))
[ "$step" -ge 1 ] || step=1
picked=0
for ((i = 0; i < ${#diags[@]} && picked < 30; i += step)); do
	f=${diags[$i]}
	cmd=check
	head -n 1 "$src/tests/diag/$f" | grep -q '^# expect-report:' && cmd=report
	job "diag/$f" "$src/tests/diag" 1 "$cmd" "$f"
	picked=$((picked + 1))
done
# One that fgc report rejects, whatever the step picked.
for f in "$src"/tests/diag/err-report-fuse-*.fg; do
	[ -e "$f" ] && job "diag/$(basename "$f") (report)" "$src/tests/diag" 1 report "$(basename "$f")"
	break
done

for f in empty-file 12-bytes-header-asks-4-gib header-not-dict keys-duplicate-shape \
	dtype-structured shape-product-overflows data-truncated decl-wrong-shape bool-byte-2 ok-v3; do
	row=$(grep -m 1 "^$f\.npy	" "$src/tests/npy/cases.txt") || continue
	IFS=$'\t' read -r file decl verdict _ <<<"$row"
	d=$tmp/npy-$f
	mkdir -p "$d/in"
	cp "$src/tests/npy/$file" "$d/in/x.npy"
	printf 'graph g {\n  input x : %s\n  y = x\n  output y\n}\n' "$decl" >"$d/g.fg"
	want=1
	[ "$verdict" = accept ] && want=0
	job "npy/$file" "$d" "$want" run g.fg --inputs in --outputs out
done

par=$(nproc 2>/dev/null || echo 2)
[ "$par" -ge 2 ] || par=2
[ "$par" -le 4 ] || par=4
echo "note: $n cases under valgrind, $par at a time"
# Each line of $jobs is one job: ID, DIR, STATUS, ARGS..., tab-separated
# (no argument holds a tab); xargs calls this script back with --job.
xargs -d '\n' -P "$par" -I '{}' bash -c \
	'IFS=$'"'"'\t'"'"' read -r -a a <<<"$1"; exec bash "$2" --job "${a[@]}"' _ '{}' "$0" <"$jobs"

pass=0 fail=0
for ((i = 1; i <= n; i++)); do
	id=$(printf '%03d' "$i")
	if [ ! -f "$tmp/$id.result" ]; then
		echo "FAIL ${names[$i]}: no result"; fail=$((fail + 1))
	elif why=$(cat "$tmp/$id.result") && [ -n "$why" ]; then
		echo "FAIL ${names[$i]}: $why"
		sed 's/^/    /' "$tmp/$id.vg" 2>/dev/null | head -n 20
		fail=$((fail + 1))
	else
		echo "PASS ${names[$i]}"; pass=$((pass + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
