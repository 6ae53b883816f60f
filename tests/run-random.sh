#!/usr/bin/env bash
# Differential random graphs (testing.md, layer 5): tests/random/gen_graph.py
# writes N valid random graphs (seeds RANDOM_SEED, RANDOM_SEED+1, ...); for
# each, `fgc verify` runs the fusion plan group by group on the reference
# interpreter, stored values rounded to their dtype, against the op-by-op
# result, fused and with --no-fuse; each group of the fused plan must
# extract (`fgc extract`) into a .fg that parses back, and hold only ops
# its kind can run.  Then every tests/random/regress-*.fg must do the same.
#
# Usage: bash tests/run-random.sh FGC SOURCE_DIR BUILD_DIR [N]
#   N               graphs (default RANDOM_GRAPHS, else 150); e.g. 2000 for
#                   a campaign
#   RANDOM_SEED     first seed (default 1000: CI is reproducible)
#   RANDOM_JOBS     graphs verified at once (default 2)
#   RANDOM_QUIET=1  print failures and notes only, not a PASS line a graph
#   RANDOM_COMPILE=1  also run each plan through the CUDA emitter
#                   (`fgc compile G -o OUT`, no nvcc), when fgc has it: it
#                   refuses plans a kernel cannot run (a reduced value read
#                   at another block's row), which the CPU verifier, that
#                   computes every value whole, cannot see
#
# One line per graph: PASS, FAIL or ROUND.  A FAIL names its class,
#   crash        fgc exited with neither 0 nor 1, or ran past 120 s;
#   illegal-plan verify refused the plan (exit 1 without a mismatch), or
#                a group holds an op its kind cannot run or writes nothing
#                (gen_graph.py --lint);
#   mismatch     the plan's values differ beyond tolerance;
#   extract      a group of the plan, written by `fgc extract`, does not
#                parse back (fgc check rejects it);
#   generator    gen_graph.py wrote a graph fgc check rejects (its bug);
#   backend-refused  `fgc compile` refused the plan (RANDOM_COMPILE=1, or a
#                regression marked `# check: compile`; a crash of it is a
#                crash),
# the seed, and the command that reproduces it; the graph and fgc's output
# are copied to BUILD_DIR/random-failures/.  ROUND is a mismatch shown to
# be the rounding of stored values (rounding_only below: it vanishes with
# every f16/bf16 made f32 under the same plan, or when the op-by-op result
# rounds the values the plan stores as the plan does): the legitimate
# cost of storing intermediates, past a tolerance that allows about one
# rounding (deep unfused bf16 chains, exp of a stored f32), counted as a
# pass and listed.  Any other mismatch is a FAIL however small.
# Graph SEED is verified with --seed SEED and plan options chosen by its
# seed (options() below), printed with any failure.  A regression file may
# say `# verify-seed: S` and `# verify-options: OPTS`.  Shrink a failure
# with tests/random/shrink.py.
set -u
fgc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
build=$(mkdir -p "$3" && cd "$3" && pwd)
n=${4:-${RANDOM_GRAPHS:-150}}
base=${RANDOM_SEED:-1000}
jobs=${RANDOM_JOBS:-2}
py=${PYTHON:-/usr/bin/python3}
gen=$src/tests/random/gen_graph.py
faildir=$build/random-failures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
has_compile=0
"$fgc" --help 2>&1 | grep -q "^  compile " && has_compile=1
export fgc src py gen faildir tmp has_compile

# verify MODE SEED G OUT: fgc verify's exit status, output in OUT; $opts
# holds the plan options of the graph.
verify() {
	timeout 120 "$fgc" verify $1 $opts --seed "$2" "$3" >"$4" 2>&1
}
export -f verify

# Plan options for graph SEED, so that the register splitter and the
# fan-out cost model decide differently: two graphs in five get the
# defaults, the others a low register limit (not with fuse { }, which a
# tiny limit may rightly refuse) and/or other launch costs and bandwidths.
options() {
	local seed=$1 g=$2
	case $((seed % 5)) in
	2) grep -q "fuse {" "$g" || echo "--reg-limit $((20 + (seed / 5) % 4 * 8))" ;;
	3) if [ $((seed / 5 % 2)) = 0 ]; then echo "--launch-us 0.01"; else echo "--launch-us 50 --bw 500"; fi ;;
	4) grep -q "fuse {" "$g" && echo "--bw 100" || echo "--reg-limit 40 --launch-us 20" ;;
	esac
}
export -f options

# The class of a failed verify from its status and output.
classify() {
	case $1 in
	1) if grep -q "differ from the op-by-op" "$2"; then echo mismatch; else echo illegal-plan; fi ;;
	*) echo crash ;;
	esac
}
export -f classify

# Whether the mismatch of G under MODE is only the rounding of the values
# the plan stores, and so not the plan's doing; prints which test said so:
#   all-f32   the graph with every f16/bf16 made f32 verifies (and, fused,
#             gets the same groups, so the plan is not what changed);
#   stored    the op-by-op result agrees once it rounds, to their own
#             dtypes, the values the plan stores and reads back (each made
#             cast(v, dtype=its own), gen_graph.py --round-stored), under a
#             plan that stores nothing else.  The two then compute the same
#             numbers: what is left is evaluation order, which the
#             tolerances cover.  This is how an f32 graph shows a mismatch
#             to be rounding: exp(t) turns t's stored rounding into a
#             relative error |t| times larger, past an RMSE gate that
#             allows about one rounding of the result.
rounding_only() {
	local mode=$1 seed=$2 g=$3 g32=${3%.fg}.f32.fg ge=${3%.fg}.exp.fg gr=${3%.fg}.stored.fg
	"$py" "$gen" --promote "$g" "$g32" || return 1
	if ! cmp -s "$g" "$g32" && verify "$mode" "$seed" "$g32" "$g32.out"; then
		if [ "$mode" = --no-fuse ]; then
			echo all-f32
			return 0
		fi
		"$fgc" report $opts --format json "$g" | "$py" "$gen" --plan-sig >"$g.sig" 2>/dev/null &&
			"$fgc" report $opts --format json "$g32" | "$py" "$gen" --plan-sig >"$g32.sig" 2>/dev/null &&
			cmp -s "$g.sig" "$g32.sig" && echo all-f32 && return 0
	fi
	"$fgc" check -d expand "$g" >"$ge" 2>/dev/null &&
		"$fgc" report $mode $opts --format json "$ge" >"$ge.json" 2>/dev/null &&
		"$py" "$gen" --round-stored "$ge" "$ge.json" "$gr" &&
		"$fgc" report $mode $opts --format json "$gr" >"$gr.json" 2>/dev/null &&
		"$py" "$gen" --stores-within "$ge.json" "$gr.json" &&
		verify "$mode" "$seed" "$gr" "$gr.out" && echo stored
}
export -f rounding_only

# failed WHAT DETAILS [FILE SUFFIX]: records a failure of the graph that
# one() checks (its $res and $note): keeps the graph in $faildir, with FILE
# as NAME.SUFFIX; WHAT names the class and the command that reproduces it,
# GRAPH standing for the kept graph; DETAILS are fgc's words.
failed() {
	local name=${file:+$(basename "$g" .fg)}
	name=${name:-seed-$seed}
	mkdir -p "$faildir"
	[ -n "$file" ] || cp "$g" "$faildir/$name.fg"
	[ -z "${3:-}" ] || cp "$3" "$faildir/$name.$4"
	res=FAIL
	note="$note
  ${1//GRAPH/${file:-$faildir/$name.fg}}"
	[ -z "$2" ] || note="$note
$(printf '%s\n' "$2" | sed 's/^/    /')"
}
export -f failed

# one SEED [FILE]: generates graph SEED (or takes FILE, a regression) and
# verifies it both ways; writes one result line to $tmp/res.SEED.
one() {
	local seed=$1 file=${2:-} g res="PASS" note="" vseed
	if [ -n "$file" ]; then
		g=$tmp/$(basename "$file")       # its scratch files go to $tmp
		cp "$file" "$g"
		vseed=$(sed -n 's/^# verify-seed: *\([0-9]*\).*/\1/p' "$g" | head -1)
		vseed=${vseed:-0}
		opts=$(sed -n 's/^# verify-options: *//p' "$g" | head -1)
	else
		g=$tmp/g$seed.fg
		vseed=$seed
		if ! "$py" "$gen" "$seed" -o "$g" --fgc "$fgc" 2>"$tmp/gen$seed.err"; then
			mkdir -p "$faildir" && cp "$g" "$faildir/seed-$seed.fg" 2>/dev/null
			cp "$tmp/gen$seed.err" "$faildir/seed-$seed.gen.err"
			echo "FAIL seed $seed generator: $py $gen $seed --fgc $fgc -o g.fg: $(tail -3 "$tmp/gen$seed.err" | tr '\n' ' ')" >"$tmp/res.$seed"
			return
		fi
		opts=$(options "$seed" "$g")
	fi
	export opts
	# Every group of the plan, extracted (`fgc extract`), must parse back.
	local ng gi
	ng=$("$fgc" report $opts --format json "$g" 2>/dev/null | grep -c '"kind":')
	for ((gi = 0; gi < ng; gi++)); do
		if ! "$fgc" extract $opts "$g" --group "$gi" >"$g.x$gi.fg" 2>"$g.xerr" ||
			! "$fgc" check "$g.x$gi.fg" >/dev/null 2>>"$g.xerr"; then
			failed "extract (group $gi does not parse back): $fgc extract $opts GRAPH --group $gi | $fgc check /dev/stdin" \
				"$(head -2 "$g.xerr")" "$g.x$gi.fg" "group$gi.fg"
			break
		fi
	done
	if ! "$fgc" report $opts --format json "$g" 2>"$g.lint" | "$py" "$gen" --lint >>"$g.lint" 2>&1; then
		failed "illegal-plan (gen_graph.py --lint): $fgc report $opts --format json GRAPH | $py $gen --lint" \
			"$(head -4 "$g.lint")"
	fi
	local rc cls
	for mode in "" --no-fuse; do
		local out=$g.verify$mode.out
		verify "$mode" "$vseed" "$g" "$out"
		rc=$?
		[ "$rc" -eq 0 ] && continue
		cls=$(classify "$rc" "$out")
		[ "$rc" -eq 124 ] && cls="crash (timeout)"
		local why
		if [ -z "$file" ] && [ "$cls" = mismatch ] && why=$(rounding_only "$mode" "$vseed" "$g"); then
			note="$note ROUND(${mode:-fused}: $why)"
			continue
		fi
		failed "$cls (exit $rc): $fgc verify $mode $opts --seed $vseed GRAPH" \
			"$(grep -v '^ok ' "$out" | head -6)" "$out" "${mode:+no-fuse.}out"
	done
	# The plan through the CUDA emitter (`fgc compile`, no nvcc), which
	# refuses what a kernel cannot run: with RANDOM_COMPILE=1, and for a
	# regression that says `# check: compile`, when fgc has the command.
	if [ "$has_compile" = 1 ] && { [ "${RANDOM_COMPILE:-0}" = 1 ] ||
		{ [ -n "$file" ] && grep -q "^# check: compile" "$g"; }; }; then
		local cout=$tmp/cu.${seed//[^0-9a-z]/}
		timeout 120 "$fgc" compile $opts "$g" -o "$cout" >"$g.compile.out" 2>&1
		rc=$?
		if [ "$rc" -ne 0 ]; then
			cls="crash (fgc compile, exit $rc)"
			[ "$rc" -eq 124 ] && cls="crash (fgc compile, timeout)"
			[ "$rc" -eq 1 ] && cls="backend-refused (fgc compile)"
			failed "$cls: $fgc compile $opts GRAPH -o OUT" \
				"$(grep -m2 'error' "$g.compile.out")" "$g.compile.out" compile.out
		fi
		rm -f "$cout" "$cout.cu"
	fi
	local what=${file:-seed $seed}
	if [ "$res" = PASS ] && [ -n "$note" ]; then
		echo "ROUND $what:$note (the rounding of stored values)" >"$tmp/res.$seed"
	else
		echo "$res $what$note" >"$tmp/res.$seed"
	fi
}
export -f one

start=$(date +%s)
seq "$base" $((base + n - 1)) | xargs -P "$jobs" -I{} bash -c 'one {}'
pass=0 fail=0 round=0
for s in $(seq "$base" $((base + n - 1))); do
	line=$(cat "$tmp/res.$s" 2>/dev/null || echo "FAIL seed $s: no result (worker died)")
	case $line in
	PASS*) pass=$((pass + 1)); [ "${RANDOM_QUIET:-0}" = 1 ] || echo "$line" ;;
	ROUND*) pass=$((pass + 1)); round=$((round + 1)); echo "$line" ;;
	*) fail=$((fail + 1)); echo "$line" ;;
	esac
done
# Regressions: minimal graphs of failures found before, strictly.
k=0
for r in "$src"/tests/random/regress-*.fg; do
	[ -e "$r" ] || continue
	k=$((k + 1))
	one "r$k" "$r"
	line=$(cat "$tmp/res.r$k")
	case $line in
	PASS*) pass=$((pass + 1)); echo "$line" ;;
	*) fail=$((fail + 1)); echo "$line" ;;
	esac
done
# The RMSE gate's baseline (fgc run --in-dtype) against NumPy's f32 on the
# GPU campaign's two all-f32 mismatches (docs/testing.md, f32-gate.py).
if "$py" -c 'import numpy' 2>/dev/null; then
	if "$py" "$src/tests/random/f32-gate.py" "$fgc" >"$tmp/f32-gate.log" 2>&1; then
		pass=$((pass + 1)); echo "PASS f32-gate: $(tail -1 "$tmp/f32-gate.log")"
	else
		fail=$((fail + 1)); echo "FAIL f32-gate:"; sed 's/^/    /' "$tmp/f32-gate.log"
	fi
else
	fail=$((fail + 1)); echo "FAIL f32-gate: $py cannot import numpy (Debian: apt-get install python3-numpy)"
fi
echo "random graphs: $n from seed $base in $(($(date +%s) - start)) s; $round passed only as rounding"
[ "$fail" -eq 0 ] || echo "failures copied to $faildir"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
