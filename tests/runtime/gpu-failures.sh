#!/usr/bin/env bash
# gpu-failures.sh [FGC] [DIR] [GEMM_TEST] - the runtime's failure paths, on a
# machine with a GPU: each failure must end the binary with exit status 1
# and one line that says what failed (testing.md: a clear error, never a
# crash or a silent wrong answer).  One PASS/FAIL line per case; exit 1 if
# any failed.  Also the two ways of running (CUDA-graph replay, the
# default, and --no-graph), each checked against the interpreter.
#
#   no-device        CUDA_VISIBLE_DEVICES= hides the GPU: "no CUDA device: ..."
#   oom-arena        ew4_f32 at 200000 x 262144 (a 210 GB arena, more than
#                    the card's 141 GB): "cannot allocate the arena (N bytes,
#                    ...): out of memory"
#   bad-launch       a launch of 2048 threads (edited into the .cu): the
#                    launch's number, kernel, group, grid and block (as the
#                    table lists them), and CUDA's error
#   lt-null-handle   a cuBLASLt call that fails: file, line, call, status
#   lt-unsupported   a type mix cuBLASLt has no kernel for (f32 x f32 -> f16)
#   aux-ld, bias-missing, residual-relu
#                    epilogue arguments the runtime refuses itself
#   graph-check, no-graph-check, graph-bench(-eager-line), no-graph-bench
#   fault-index, fault-index-no-graph, fault-divisor   run-time errors: the
#                    first bad gather index and the first zero divisor (in
#                    C order), reported as the interpreter does, no output;
#   fault-free       the same model with every valid index, against fgc run
#   lib-fault-*      the same model as a --lib library in PyTorch: a call
#                    records, model.check() raises the same message
#
# FGC defaults to build/fgc, DIR to /tmp/fgrt-failures; GEMM_TEST is the
# binary Makefile.gpu builds from tests/runtime/gemm_epilogue.cu (built
# here into DIR when not given).  Needs nvcc ($NVCC, else on PATH or in
# /usr/local/cuda/bin).  Run from anywhere:
#   bash tests/runtime/gpu-failures.sh build/fgc /tmp/g/runtime-tests /tmp/g/runtime-tests/gemm_epilogue
set -u
cd "$(dirname "$0")/../.." || exit 1
fgc=${1:-build/fgc} dir=${2:-/tmp/fgrt-failures} gemm=${3:-}
export PATH=$PATH:/usr/local/cuda/bin
nvcc=${NVCC:-nvcc}
arch=(-gencode=arch=compute_90a,code=sm_90a)
rt=(runtime/fgrt_lib.cu runtime/fgrt_main.cu runtime/npy.c runtime/half.c runtime/check.c)
mkdir -p "$dir" || exit 1
pass=0 fail=0 failed=""

# expect NAME STATUS REGEX CMD...: CMD's output (both streams) goes to
# DIR/NAME.log; PASS when CMD exits with STATUS and some line matches REGEX
# (grep -E).  With STATUS 1 the output must also be that one line alone.
expect() {
	local name=$1 want=$2 re=$3 rc
	shift 3
	"$@" >"$dir/$name.log" 2>&1
	rc=$?
	local lines
	lines=$(grep -c . "$dir/$name.log")
	if [ "$rc" -eq "$want" ] && grep -Eq -- "$re" "$dir/$name.log" && { [ "$want" -ne 1 ] || [ "$lines" -eq 1 ]; }; then
		echo "PASS $name: $(grep -E -m1 -- "$re" "$dir/$name.log" | cut -c1-300)"
		pass=$((pass + 1))
	else
		echo "FAIL $name: exit status $rc (want $want), $lines lines; wanted a line matching: $re"
		sed 's/^/    /' "$dir/$name.log" | head -12
		fail=$((fail + 1)) failed="$failed $name"
	fi
}

# Built here: a small model (test sizes), the same at a size no card holds,
# the small one with a launch no GPU accepts, and the gemm test.
build() {       # build OUT.cu -> OUT, as `fgc compile --build` does
	"$nvcc" -O3 "${arch[@]}" -lineinfo -Iruntime -D_POSIX_C_SOURCE=200809L -o "$1" "$1.cu" "${rt[@]}" -lcublasLt \
		>"$1.build.log" 2>&1 || { echo "FAIL build $1 (see $1.build.log)"; sed 's/^/    /' "$1.build.log" | head; exit 1; }
}
dims=$(sed -n 's/^# test-dims://p' samples/gemm_bias_gelu_bf16.fg)
"$fgc" compile samples/ew4_f32.fg $(sed -n 's/^# test-dims://p' samples/ew4_f32.fg) -o "$dir/ew4" || exit 1
"$fgc" compile samples/ew4_f32.fg -D R=200000 -D C=262144 -o "$dir/ew4_huge" || exit 1
# shellcheck disable=SC2086
"$fgc" compile samples/gemm_bias_gelu_bf16.fg $dims -o "$dir/gbg" || exit 1
# run-time errors: gather indices and integer divisors (language.md)
printf '%s\n' 'graph faults {' '  input ids : i32[T=3000]' '  param table : f32[V=1000, D=256]' \
	'  input d : i32[T, D]' '  param g : f32[D]' '  y = layernorm(gather(table, ids), g, g)' \
	'  q = floordiv(cast(y * 8, dtype=i32), d)' '  output y, q' '}' >"$dir/faults.fg"
"$fgc" compile "$dir/faults.fg" -o "$dir/faults" || exit 1
sed '0,/<<<\([0-9]*\), [0-9]*, /s//<<<\1, 2048, /' "$dir/ew4.cu" >"$dir/ew4_bad.cu"
grep -q '<<<[0-9]*, 2048, ' "$dir/ew4_bad.cu" || { echo "FAIL bad-launch: could not edit a launch in ew4.cu"; exit 1; }
for m in ew4 ew4_huge ew4_bad gbg faults; do build "$dir/$m" & done
if [ -z "$gemm" ]; then
	gemm=$dir/gemm_epilogue
	"$nvcc" -O3 "${arch[@]}" -lineinfo -Iruntime -D_POSIX_C_SOURCE=200809L -o "$gemm" \
		tests/runtime/gemm_epilogue.cu runtime/fgrt_lib.cu runtime/half.c runtime/npy.c runtime/check.c -lcublasLt \
		>"$gemm.build.log" 2>&1 || { echo "FAIL build gemm_epilogue"; sed 's/^/    /' "$gemm.build.log" | head; exit 1; }
fi
wait
for m in ew4 ew4_huge ew4_bad gbg faults; do [ -x "$dir/$m" ] || exit 1; done
# shellcheck disable=SC2086
"$fgc" run samples/gemm_bias_gelu_bf16.fg $dims --seed 7 --outputs "$dir/gbg.ref" >/dev/null || exit 1

expect no-device 1 '^ew4_f32: error: no CUDA device: .*\(cuda[A-Za-z]+\)$' env CUDA_VISIBLE_DEVICES= "$dir/ew4"
expect oom-arena 1 '^ew4_f32: error: cannot allocate the arena \(209715200000 bytes, 195\.31 GiB; the device has [0-9.]+ GiB free of [0-9.]+ GiB\): out of memory \(cudaErrorMemoryAllocation\)$' \
	"$dir/ew4_huge"
# (the line names the launch as the table lists it: the edit changed only
# the launch itself, so the table still says block 256)
expect bad-launch 1 '^ew4_f32: error: launch 0 \(g0_[a-z0-9_]+, group 0, grid [0-9]+, block [0-9]+\): .+ \(cuda[A-Za-z]+\)$' \
	"$dir/ew4_bad" --no-graph
expect bad-launch-graph 1 '^ew4_f32: error: launch 0 \(g0_[a-z0-9_]+, group 0, grid [0-9]+, block [0-9]+\): .+ \(cuda[A-Za-z]+\)$' \
	"$dir/ew4_bad"
expect lt-null-handle 1 '^gemm_epilogue: error: .*fgrt_lib\.cu:[0-9]+: cublasLt[A-Za-z]+\(.*\): .+ \(CUBLAS_STATUS_[A-Z_]+\)$' \
	"$gemm" --case lt-null-handle
expect lt-unsupported 1 '^gemm_epilogue: error: (gemm slot 0: cuBLASLt has no algorithm for a f32 matmul .* into f16 with the epilogue none|.*fgrt_lib\.cu:[0-9]+: cublasLt[A-Za-z]+\(.*\): .+ \(CUBLAS_STATUS_[A-Z_]+\))$' \
	"$gemm" --case lt-unsupported
expect aux-ld 1 '^gemm_epilogue: error: gemm slot 0: the GELU_AUX epilogue needs aux rows \(ld_aux\) of at least n = 40 elements and a multiple of 8; got ld_aux 41$' \
	"$gemm" --case aux-ld
expect bias-missing 1 '^gemm_epilogue: error: gemm slot 0: the BIAS epilogue needs a bias vector, and none was passed$' \
	"$gemm" --case bias-missing
expect residual-relu 1 '^gemm_epilogue: error: gemm slot 0: a residual C with the RELU epilogue \(only with none or BIAS\)$' \
	"$gemm" --case residual-relu

expect graph-check 0 '^ok gemm_bias_gelu_bf16: 1 of 1 values match' "$dir/gbg" --seed 7 --check "$dir/gbg.ref"
expect no-graph-check 0 '^ok gemm_bias_gelu_bf16: 1 of 1 values match' "$dir/gbg" --seed 7 --check "$dir/gbg.ref" --no-graph
# The RMSE gate's baseline: DIR/in-dtype/NAME.npy (fgc run --in-dtype)
# is read and named on the verdict line; a malformed one fails the value
# with the file's error, not the program
# shellcheck disable=SC2086
"$fgc" run samples/gemm_bias_gelu_bf16.fg $dims --seed 7 --outputs "$dir/gbg.base" --in-dtype >/dev/null || exit 1
expect baseline-check 0 '^ok +y .*\(baseline in the dtype\)' "$dir/gbg" --seed 7 --check "$dir/gbg.base"
rm -rf "$dir/gbg.badbase" && cp -r "$dir/gbg.base" "$dir/gbg.badbase" &&
	cp tests/npy/bad-magic.npy "$dir/gbg.badbase/in-dtype/y.npy"
"$dir/gbg" --seed 7 --check "$dir/gbg.badbase" >"$dir/bad-baseline.log" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -Eq '^FAIL y .*in-dtype/y\.npy' "$dir/bad-baseline.log"; then
	echo "PASS bad-baseline: $(grep -m1 '^FAIL y' "$dir/bad-baseline.log" | cut -c1-300)"
	pass=$((pass + 1))
else
	echo "FAIL bad-baseline: exit status $rc (want 1), no 'FAIL y' line naming in-dtype/y.npy"
	sed 's/^/    /' "$dir/bad-baseline.log" | head -12
	fail=$((fail + 1)) failed="$failed bad-baseline"
fi
expect graph-bench 0 '^  total [0-9.]+ ms \(replay of one CUDA graph\)' "$dir/gbg" --bench 5
if grep -q '^  eager total [0-9.]* ms' "$dir/graph-bench.log"; then
	echo "PASS graph-bench-eager-line: $(grep '^  eager total' "$dir/graph-bench.log")"
	pass=$((pass + 1))
else
	echo "FAIL graph-bench-eager-line: no '  eager total' line in $dir/graph-bench.log"
	fail=$((fail + 1)) failed="$failed graph-bench-eager-line"
fi
expect no-graph-bench 0 '^  total [0-9.]+ ms \(eager launches, --no-graph\)' "$dir/gbg" --bench 5 --no-graph

# fault NAME INPUTS REGEX ARGS...: the faults binary on inputs DIR/INPUTS
# (written by python3 below): exit status 1, its first line REGEX (the
# interpreter's message), then the source line and a caret; no output.
fault() {
	local name=$1 in=$2 re=$3 rc
	shift 3
	rm -rf "$dir/$name.out"
	"$dir/faults" --inputs "$dir/$in" --draw-missing --outputs "$dir/$name.out" "$@" >"$dir/$name.log" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && head -1 "$dir/$name.log" | grep -Eq -- "$re" && [ "$(grep -c . "$dir/$name.log")" -eq 3 ] &&
	   sed -n 3p "$dir/$name.log" | grep -Eq '^ +\^$' && [ ! -e "$dir/$name.out" ]; then
		echo "PASS $name: $(head -1 "$dir/$name.log" | cut -c1-300)"
		pass=$((pass + 1))
	else
		echo "FAIL $name: exit status $rc (want 1); wanted 3 lines, the first matching: $re, and no output"
		sed 's/^/    /' "$dir/$name.log" | head -12
		fail=$((fail + 1)) failed="$failed $name"
	fi
}
python3 -c '
import os, sys
import numpy as np
d = sys.argv[1]
ids = (np.arange(3000) % 2000 - 1000).astype(np.int32)      # every index of [-1000, 1000)
div = np.where(np.arange(3000 * 256).reshape(3000, 256) % 7 == 3, -1, 3).astype(np.int32)
bad = ids.copy(); bad[2999] = 1000; bad[1717] = -1001      # the first in C order: 1717
zero = div.copy(); zero[2500, 17] = 0; zero[2999, 255] = 0; zero[1234, 200] = 0
for name, (i, v) in {"ok": (ids, div), "index": (bad, div), "divisor": (ids, zero)}.items():
    os.makedirs(os.path.join(d, "faults-" + name), exist_ok=True)
    np.save(os.path.join(d, "faults-" + name, "ids.npy"), i)
    np.save(os.path.join(d, "faults-" + name, "d.npy"), v)
' "$dir" || exit 1
fault fault-index faults-index '^.*faults\.fg:6:17: error: gather index -1001 out of range \[-1000, 1000\) at ids\[1717\]$'
fault fault-index-no-graph faults-index '^.*faults\.fg:6:17: error: gather index -1001 out of range \[-1000, 1000\) at ids\[1717\]$' --no-graph
fault fault-divisor faults-divisor "^.*faults\\.fg:7:7: error: integer division by zero in 'floordiv' at q\\[1234, 200\\]\$"
"$fgc" run "$dir/faults.fg" --inputs "$dir/faults-ok" --draw-missing --outputs "$dir/faults-ok.ref" >/dev/null || exit 1
expect fault-free 0 '^ok faults: 2 of 2 values match' "$dir/faults" --inputs "$dir/faults-ok" --draw-missing --check "$dir/faults-ok.ref"

# the same model as a library (--lib): a call records, model.check() reports
mkdir -p "$dir/lib" && "$fgc" compile "$dir/faults.fg" --lib -o "$dir/lib/libfaults.so" >"$dir/lib.log" 2>&1 ||
	{ echo "FAIL compile faults --lib"; sed 's/^/    /' "$dir/lib.log" | head; exit 1; }
PYTHONPATH=python python3 - "$dir" >"$dir/lib-faults.log" 2>&1 <<'PY'
import sys
import numpy as np
import torch
import fgc
d = sys.argv[1]
model = fgc.load(d + "/lib/libfaults.so")
g = torch.ones(256, device="cuda")
table = torch.rand(1000, 256, device="cuda")
for name, want in (("ok", None), ("index", "error: gather index -1001 out of range [-1000, 1000) at ids[1717]"),
                   ("divisor", "error: integer division by zero in 'floordiv' at q[1234, 200]")):
    ids, dv = (torch.from_numpy(np.load(f"{d}/faults-{name}/{t}.npy")).cuda() for t in ("ids", "d"))
    model(ids, table, dv, g)
    try:
        model.check()
        got = None
    except fgc.ModelError as e:
        got = str(e).splitlines()
    ok = got is None if want is None else bool(got) and got[0].endswith(want) and len(got) == 3
    print("%s lib-fault-%s: %s" % ("PASS" if ok else "FAIL", name, got[0] if got else "no error"))
PY
while read -r verdict rest; do
	case $verdict in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) failed="$failed ${rest%%:*}" ;; *) continue ;; esac
	echo "$verdict $rest"
done <"$dir/lib-faults.log"
grep -q '^PASS lib-fault-divisor' "$dir/lib-faults.log" ||
	{ echo "FAIL lib-faults:"; sed 's/^/    /' "$dir/lib-faults.log" | tail -8; fail=$((fail + 1)) failed="$failed lib-faults"; }

echo "$pass passed, $fail failed${failed:+:$failed}"
[ "$fail" -eq 0 ]
