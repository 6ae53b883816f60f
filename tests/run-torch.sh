#!/bin/bash
# run-torch.sh FGC SOURCE_DIR BUILD_DIR - `fgc emit-torch` (docs/peers.md):
#  1. every samples/*.fg at its default sizes gives a module that Python
#     compiles and whose RESULTS and return name each `output` name and
#     each saved.NAME of an `@save` statement;
#  2. every module, at small sizes, computes what `fgc run` computes: run in
#     reference mode (float64) under bench/torchshim, a NumPy stand-in for
#     the part of PyTorch the modules call, on the same inputs, and compared
#     per result (bench/check_emitted.py): the samples and tests/gpu/*.fg at
#     their `# test-dims:` with inputs drawn from --seed 7 by both sides,
#     tests/golden/interp/*.fg on their in/ files, and a graph that returns
#     its inputs, whose results must match bit for bit (the module draws
#     the interpreter's inputs);
#  3. bad input is reported like every command reports it (file:line:col),
#     with exit status 1 and no file written.
# PyTorch itself runs the modules on the GPU machine (bench/peers.py).
# One PASS/FAIL line per check, then a total.
set -u
fgc=$1 src=$2 build=$3
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${build%/}/torch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/full" "$tmp/small" "$tmp/ref" "$tmp/log"
pass=0 fail=0

. "$src/tests/lib.sh"
need_numpy

# Runs fgc with the arguments given, its output appended to $log, and on a
# failure adds "fgc ARGS exited with status N" there (after `if ! cmd`, $?
# is the negation's 0, not fgc's status).
fgc_logged() {
	local rc
	"$fgc" "$@" >>"$log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || echo "fgc $* exited with status $rc" >>"$log"
	return "$rc"
}

# 1. default sizes: compiles, names every output and saved value
for fg in "$src"/samples/*.fg; do
	name=$(basename "$fg" .fg) log=$tmp/log/full-$name mod=$tmp/full/$name.py
	: >"$log"
	if fgc_logged emit-torch "$fg" -o "$mod" && "$py" -m py_compile "$mod" >>"$log" 2>&1; then
		read -ra outs < <(sed -n 's/#.*//; s/^[[:space:]]*output[[:space:]]//p' "$fg" | tr ',' ' ')
		read -ra saved < <(sed -n 's/#.*//; s/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*=.*@save.*/saved.\1/p' "$fg" | tr '\n' ' ')
		for key in "${outs[@]}" "${saved[@]}"; do
			[ "$(grep -c "^ *\"$key\": " "$mod")" -eq 2 ] ||
				echo "'$key' is not both in RESULTS and in forward's return" >>"$log"
		done
	fi
	verdict "emit $name" "$log"
done

# 2. small sizes against the interpreter; one manifest line per case
: >"$tmp/manifest"
# case NAME FG INPUTS SEED MODE [-D ...]: emit, run fgc run, add the case.
case_of() {
	local name=$1 fg=$2 inputs=$3 seed=$4 mode=$5 log=$tmp/log/$1
	shift 5
	: >"$log"
	if fgc_logged emit-torch "$fg" "$@" -o "$tmp/small/$name.py" &&
	   fgc_logged run "$fg" "$@" --seed "$seed" --outputs "$tmp/ref/$name" ${inputs:+--inputs "$inputs"}; then
		: >"$log"
		echo "$tmp/small/$name.py $tmp/ref/$name ${inputs:--} $seed $mode" >>"$tmp/manifest"
	fi
}
for fg in "$src"/samples/*.fg "$src"/tests/gpu/*.fg; do
	read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
	case_of "$(basename "$fg" .fg)" "$fg" "" 7 tol "${dims[@]}"
done
for fg in "$src"/tests/golden/interp/*.fg; do
	name=$(basename "$fg" .fg)
	case_of "golden-$name" "$fg" "$src/tests/golden/interp/$name/in" 0 tol
done
cat >"$tmp/draws.fg" <<'EOF'
# Every kind of drawn input: floats, weights (rank >= 2 params, scaled by
# 1/sqrt(fan-in)) in each float dtype, i32, bool; returned as they are.
graph draws {
  input a  : f32[37, 5]
  input h  : f16[300]
  param w  : f16[7, 3]
  param wb : bf16[9, 33]
  param wf : f32[4, 3, 21]
  param b  : bf16[40]
  input m  : bool[11]
  input i  : i32[13]
  output a, h, w, wb, wf, b, m, i
}
EOF
case_of draws "$tmp/draws.fg" "" 12345678901234 exact
cat >"$tmp/edges.fg" <<'EOF'
# What the emitter must get right beyond one op per line: names that are
# Python keywords or the module's own globals, numbers on either side and
# on both sides, composites over axes their torch function does not take
# or with weights that broadcast, i32 sums, casts, dropout's 63-bit seed.
graph edges {
  input lambda : f32[6, 5]
  input torch  : f16[4, 6, 5]
  param F      : bf16[6, 1]
  input i      : i32[6, 5]
  input m      : bool[6, 5]
  a  = maximum(2, lambda) + minimum(lambda, -0.25) + maximum(lambda, lambda * 0.5)
  b  = pow(2, lambda) + pow(abs(lambda), 1.5) + pow(2, 3)
  c  = where(m, 1.5, lambda) + where(m, lambda, -2) + where(lambda > 0, 3, -3)
  reference = softmax(lambda, axis=[0, 1]) + log_softmax(lambda, axis=0) + log_softmax(lambda)
  in = layernorm(torch, cast(F, dtype=f16), cast(F, dtype=f16), axis=[1, 2], eps=0.001)
  def = rmsnorm(torch, cast(F, dtype=f16), axis=1)
  s  = sum(i, axis=0, keepdims=false) + sum(i * 2)
  x2 = mean(torch, axis=[0, 2], keepdims=false)
  k  = concat(slice(lambda, axis=1, start=1, end=3), broadcast_to(cast(F, dtype=f32), shape=[6, 2]) , axis=1)
  d  = dropout(lambda, p=0.25, seed=9223372036854775807)
  e  = cast(lambda * 1000, dtype=i32) + cast(m, dtype=i32) + cast(2.5, dtype=i32)
  f  = cast(lambda, dtype=bool) == m
  g  = neg(i) + relu(i) + abs(i) + square(i)
  h  = exp(cast(1, dtype=f32)) + lambda
  j  = transpose(torch) @save
  output a, b, c, reference, in, def, s, x2, k, d, e, f, g, h, lambda
}
EOF
case_of edges "$tmp/edges.fg" "" 5 tol
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$src/bench/torchshim "$py" "$src/bench/check_emitted.py" "$tmp/manifest" >"$tmp/check.log" 2>&1
grep -vE '^(PASS|FAIL) |^    |^[0-9]+ passed' "$tmp/check.log" >"$tmp/check-errors.log"
verdict check_emitted.py "$tmp/check-errors.log"
while read -r mod _; do
	name=$(basename "$mod" .py) log=$tmp/log/$name
	awk -v n="$name" '$0 == "PASS " n || $0 == "FAIL " n { on = 1; next } /^(PASS|FAIL) |^[0-9]+ passed/ { on = 0 } on' \
		"$tmp/check.log" >"$log"
	grep -qx "PASS $name" "$tmp/check.log" || [ -s "$log" ] || echo "no verdict" >"$log"
done <"$tmp/manifest"
for log in "$tmp"/log/*; do
	name=$(basename "$log")
	case $name in full-*) continue ;; esac
	verdict "torch $name" "$log"
done

# 3. bad input: located error, status 1, nothing written
bad=$tmp/bad.fg log=$tmp/log-bad
printf 'graph bad {\n  input x : f32[4]\n  y = softmax(x) + zz\n  output y\n}\n' >"$bad"
"$fgc" emit-torch "$bad" -o "$tmp/bad.py" >"$log" 2>&1
status=$?
{
	[ "$status" -eq 1 ] || echo "exit status $status, want 1"
	grep -q "bad.fg:3:20: error: " "$log" || { echo "no located error:"; cat "$log"; }
	[ ! -e "$tmp/bad.py" ] || echo "wrote bad.py"
	ls "$tmp" | grep -q 'bad.py.tmp' && echo "left a temporary file"
} >"$tmp/bad.log" 2>&1
verdict "emit-torch bad input" "$tmp/bad.log"
"$fgc" emit-torch "$src/samples/softmax_f16.fg" -o "$tmp/no/such/dir/x.py" >"$log" 2>&1
status=$?
{
	[ "$status" -eq 1 ] || echo "exit status $status, want 1"
	grep -q "^fgc: error: cannot write '$tmp/no/such/dir/x.py'" "$log" || { echo "no error:"; cat "$log"; }
} >"$tmp/bad.log" 2>&1
verdict "emit-torch unwritable -o" "$tmp/bad.log"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
