#!/usr/bin/env bash
# Differential random graphs (testing.md, layer 5): tests/random/gen_graph.py
# writes N valid random graphs (seeds RANDOM_SEED, RANDOM_SEED+1, ...); for
# each, `fgc verify` runs the fusion plan group by group on the reference
# interpreter, stored values rounded to their dtype, against the op-by-op
# result, fused and with --no-fuse.  Then every tests/random/regress-*.fg
# must verify both ways.
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
#                a group holds an op its kind cannot run (gen_graph.py --lint);
#   mismatch     the plan's values differ beyond tolerance;
#   generator    gen_graph.py wrote a graph fgc check rejects (its bug);
#   backend-refused  `fgc compile` refused the plan (RANDOM_COMPILE=1, or a
#                regression marked `# check: compile`),
# the seed, and the command that reproduces it; the graph and fgc's output
# are copied to BUILD_DIR/random-failures/.  ROUND is a mismatch that
# vanishes when every f16/bf16 in the graph is made f32 while the plan stays
# the same, or whose error is small (under 1e-3 relative in f32, 3e-2 in
# f16, 0.2 in bf16): the legitimate cost of rounding stored intermediates
# more than the tolerance allows (deep unfused bf16 chains; large f32
# values past atol); it is counted as a pass and listed, since the RMSE
# gate allows about one rounding.
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

# Whether the mismatch of G under MODE is only rounding: the graph with
# every f16/bf16 made f32 verifies under the same plan; or the error (of
# that graph, else G's own) is small (gen_graph.py --gross: < 1e-3
# relative in f32, which stores round at 6e-8; < 3e-2 in f16).  A plan
# that computes a wrong thing is off by far more.
rounding_only() {
	local mode=$1 seed=$2 g=$3 g32=${3%.fg}.f32.fg judge=$3.verify$1.out
	"$py" "$gen" --promote "$g" "$g32" || return 1
	if ! cmp -s "$g" "$g32"; then
		if verify "$mode" "$seed" "$g32" "$g32.out"; then
			[ "$mode" = --no-fuse ] && return 0
			"$fgc" report $opts --format json "$g" | "$py" "$gen" --plan-sig >"$g.sig" 2>/dev/null &&
				"$fgc" report $opts --format json "$g32" | "$py" "$gen" --plan-sig >"$g32.sig" 2>/dev/null &&
				cmp -s "$g.sig" "$g32.sig" && return 0
		else
			judge=$g32.out
		fi
	fi
	! "$py" "$gen" --gross "$judge"
}
export -f rounding_only

# one SEED [FILE]: generates graph SEED (or takes FILE, a regression) and
# verifies it both ways; writes one result line to $tmp/res.SEED.
one() {
	local seed=$1 file=${2:-} g res="PASS" note="" vseed
	if [ -n "$file" ]; then
		g=$file
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
	if ! "$fgc" report $opts --format json "$g" 2>"$g.lint" | "$py" "$gen" --lint >>"$g.lint" 2>&1; then
		local name=${file:+$(basename "$g" .fg)}
		name=${name:-seed-$seed}
		mkdir -p "$faildir"
		[ -n "$file" ] || cp "$g" "$faildir/$name.fg"
		res="FAIL"
		note="$note
  illegal-plan (group kinds): $fgc report $opts --format json ${file:-$faildir/$name.fg} | $py $gen --lint
$(head -4 "$g.lint" | sed 's/^/    /')"
	fi
	for mode in "" --no-fuse; do
		local out=$g.verify$mode.out rc cls
		verify "$mode" "$vseed" "$g" "$out"
		rc=$?
		[ "$rc" -eq 0 ] && continue
		cls=$(classify "$rc" "$out")
		[ "$rc" -eq 124 ] && cls="crash (timeout)"
		if [ -z "$file" ] && [ "$cls" = mismatch ] && rounding_only "$mode" "$vseed" "$g"; then
			note="$note ROUND(${mode:-fused})"
			continue
		fi
		local name=${file:+$(basename "$g" .fg)}
		name=${name:-seed-$seed}
		mkdir -p "$faildir"
		[ -n "$file" ] || cp "$g" "$faildir/$name.fg"
		cp "$out" "$faildir/$name${mode:+.no-fuse}.out"
		res="FAIL"
		note="$note
  $cls (exit $rc): $fgc verify $mode $opts --seed $vseed ${file:-$faildir/$name.fg}
$(grep -v '^ok ' "$out" | head -6 | sed 's/^/    /')"
	done
	# The plan through the CUDA emitter (`fgc compile`, no nvcc), which
	# refuses what a kernel cannot run: with RANDOM_COMPILE=1, and for a
	# regression that says `# check: compile`, when fgc has the command.
	if [ "$has_compile" = 1 ] && { [ "${RANDOM_COMPILE:-0}" = 1 ] ||
		{ [ -n "$file" ] && grep -q "^# check: compile" "$g"; }; }; then
		local cout=$tmp/cu.${seed//[^0-9a-z]/}
		if ! timeout 120 "$fgc" compile $opts "$g" -o "$cout" >"$g.compile.out" 2>&1; then
			local name=${file:+$(basename "$g" .fg)}
			name=${name:-seed-$seed}
			mkdir -p "$faildir"
			[ -n "$file" ] || cp "$g" "$faildir/$name.fg"
			cp "$g.compile.out" "$faildir/$name.compile.out"
			res="FAIL"
			note="$note
  backend-refused (fgc compile): $fgc compile $opts ${file:-$faildir/$name.fg} -o OUT
$(grep -m2 'error' "$g.compile.out" | sed 's/^/    /')"
		fi
		rm -f "$cout" "$cout.cu"
	fi
	local what=${file:-seed $seed}
	if [ "$res" = PASS ] && [ -n "$note" ]; then
		echo "ROUND $what:$note (rounding of stored values: f32 agrees, or the error is small)" >"$tmp/res.$seed"
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
echo "random graphs: $n from seed $base in $(($(date +%s) - start)) s; $round passed only as rounding"
[ "$fail" -eq 0 ] || echo "failures copied to $faildir"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
