#!/usr/bin/env bash
# run-runtime.sh FGC SOURCE_DIR BUILD_DIR - the host runtime where there is
# nvcc but no GPU (CI):
#   1. a model built by `fgc compile --build` answers --help (which names
#      --no-graph) and refuses bad options with exit status 1;
#   2. run with no GPU (or no driver) it prints one line, "NAME: error: no
#      CUDA device: <CUDA's reason>", and exits 1;
#   3. tests/runtime/gemm_epilogue.cu compiles and links with the runtime
#      built -DFGRT_NO_MAIN, with nvcc's warnings as errors, and says the
#      same when no GPU answers; so does tests/runtime/gemm_sm90.cu (the
#      generated matmul's kernel in every schedule it tests) and
#      tests/runtime/initcheck_bulk.cu (docs/testing.md's probe),
#      tests/runtime/fast_math.cu (the op table's references) and
#      tests/runtime/pair_combine.cu (a softmax pair's combination) compile;
#   4. tests/runtime/gpu-failures.sh parses (it runs on a GPU machine);
#   5. tests/runtime/div_rounded.cu, a host program: fg_div_rounded (a
#      quotient rounded to an integer, by a reciprocal) rounds as the
#      division does;
#   6. tests/random/gpu-campaign.sh's batched builds: two random graphs'
#      four programs in two binaries, each run picking its own program
#      (NO_GPU=1: each must print its own graph's no-device line);
#   7. tests/runtime/staged_lanes.cu, a host program: the attention
#      kernel's reads of a staged score operand (fga::StagedAt: ldmatrix
#      lanes, 2-byte loads) land on the accumulator layout's pairs in the
#      accelerator's swizzled tile;
#   8. tests/runtime/bf16_lanes.cu, a host program: fg_lane reads every
#      bf16 pattern at every lane of a vector as __bfloat162float does.
# Where a GPU does answer, the no-device checks are skipped with a note
# (gpu-failures.sh checks that path there).  Without nvcc (on PATH or in
# /usr/local/cuda/bin) every test is skipped.
set -u
fgc=$1 src=$2 build=$3
. "$src/tests/lib.sh"
need_nvcc "the runtime tests"
tmp=$(mktemp -d "${build%/}/runtime.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL $1: $2"
	[ -n "${3:-}" ] && [ -e "$3" ] && sed 's/^/    /' "$3" | head -20
	fail=$((fail + 1))
}

# expect NAME STATUS REGEX CMD...: CMD exits with STATUS and its output
# (both streams) is exactly one line, matching REGEX (grep -E).
expect() {
	local name=$1 want=$2 re=$3 rc log=$tmp/$1.log
	shift 3
	"$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		bad "$name" "exit status $rc, want $want" "$log"
	elif [ "$(grep -c . "$log")" -ne 1 ]; then
		bad "$name" "$(grep -c . "$log") lines of output, want one" "$log"
	elif ! grep -Eq -- "$re" "$log"; then
		bad "$name" "the line does not match $re" "$log"
	else
		ok "$name"
	fi
}

# Whether a GPU answers here: then the no-device cases cannot be seen.
# Both builds at once: nvcc spends its time parsing headers.
model=$tmp/ew4
read -ra dims < <(sed -n 's/^# test-dims://p' "$src/samples/ew4_f32.fg")
nvflags=(-gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -I"$src/runtime")
nvcc "${nvflags[@]}" -D_POSIX_C_SOURCE=200809L -o "$tmp/gemm_epilogue" \
	"$src/tests/runtime/gemm_epilogue.cu" "$src/runtime/fgrt_lib.cu" "$src/runtime/half.c" "$src/runtime/npy.c" "$src/runtime/check.c" \
	-lcublasLt >"$tmp/gemm.log" 2>&1 &
gemm_pid=$!
nvcc "${nvflags[@]}" -D_POSIX_C_SOURCE=200809L -o "$tmp/gemm_sm90" \
	"$src/tests/runtime/gemm_sm90.cu" "$src/runtime/fgrt_lib.cu" "$src/runtime/half.c" "$src/runtime/npy.c" "$src/runtime/check.c" \
	-lcublasLt >"$tmp/sm90.log" 2>&1 &
sm90_pid=$!
nvcc "${nvflags[@]}" -o "$tmp/initcheck_bulk" "$src/tests/runtime/initcheck_bulk.cu" >"$tmp/bulk.log" 2>&1 &
bulk_pid=$!
nvcc "${nvflags[@]}" -I"$src/compiler" -c -o "$tmp/fast_math.o" "$src/tests/runtime/fast_math.cu" >"$tmp/fm.log" 2>&1 &
fm_pid=$!
nvcc "${nvflags[@]}" -o "$tmp/pair_combine" "$src/tests/runtime/pair_combine.cu" >"$tmp/pair.log" 2>&1 &
pair_pid=$!
nvcc -O2 -I"$src/runtime" -o "$tmp/div_rounded" "$src/tests/runtime/div_rounded.cu" >"$tmp/div_rounded.log" 2>&1 &
divr_pid=$!
nvcc -O2 -Werror all-warnings -I"$src/runtime" -o "$tmp/staged_lanes" "$src/tests/runtime/staged_lanes.cu" >"$tmp/staged_lanes.log" 2>&1 &
lanes_pid=$!
nvcc -O2 -Werror all-warnings -I"$src/runtime" -o "$tmp/bf16_lanes" "$src/tests/runtime/bf16_lanes.cu" >"$tmp/bf16_lanes.log" 2>&1 &
bf16_pid=$!
if ! "$fgc" compile "$src/samples/ew4_f32.fg" "${dims[@]}" -o "$model" --build >"$tmp/build.log" 2>&1; then
	bad build "fgc compile --build failed" "$tmp/build.log"
	wait
	echo "$pass passed, $fail failed"
	exit 1
fi
ok build

# 1. options, checked before any CUDA call
"$model" --help >"$tmp/help.log" 2>&1
if [ $? -eq 0 ] && grep -q -- '--no-graph' "$tmp/help.log"; then ok help; else bad help "no --no-graph in --help" "$tmp/help.log"; fi
expect bad-option 1 "^ew4_f32: error: unknown option '--frobnicate' \(see --help\)$" "$model" --frobnicate
expect bad-bench 1 '^ew4_f32: error: --bench 0: expected a number of runs from 1 to 100000$' "$model" --bench 0
expect no-graph-takes-no-value 1 "^ew4_f32: error: unknown option '7' \(see --help\)$" "$model" --no-graph 7
expect missing-value 1 '^ew4_f32: error: --seed needs a value \(see --help\)$' "$model" --seed
mkdir -p "$tmp/in-empty"
expect inputs-missing 1 "^ew4_f32: error: '.*/in-empty' has no file for [0-9]+ of the [0-9]+ inputs and params: .*\.npy; it holds no \.npy file \(--draw-missing draws the missing ones from the seed\)$" \
	"$model" --inputs "$tmp/in-empty"

# 2. no device
"$model" >"$tmp/probe.log" 2>&1
if [ $? -eq 0 ]; then
	echo "note: a GPU answered here; the no-device checks were skipped (gpu-failures.sh covers them on a GPU)"
	gpu=1
else
	gpu=0
	expect no-device 1 '^ew4_f32: error: no CUDA device: .+ \(cuda[A-Za-z]+\)$' "$model"
	expect no-device-check 1 '^ew4_f32: error: no CUDA device: ' "$model" --check "$tmp" --no-graph
	expect draw-missing 1 '^ew4_f32: error: no CUDA device: ' "$model" --inputs "$tmp/in-empty" --draw-missing
fi

# 3. the gemm epilogue test compiles, links, and fails cleanly without a GPU
if wait "$gemm_pid"; then
	ok gemm-epilogue-builds
	if [ $gpu -eq 0 ]; then
		expect gemm-epilogue-no-device 1 '^gemm_epilogue: no CUDA device: ' "$tmp/gemm_epilogue"
	fi
else
	bad gemm-epilogue-builds "nvcc failed" "$tmp/gemm.log"
fi
if wait "$sm90_pid"; then ok gemm-sm90-builds; else bad gemm-sm90-builds "nvcc failed" "$tmp/sm90.log"; fi
if wait "$bulk_pid"; then ok initcheck-bulk-builds; else bad initcheck-bulk-builds "nvcc failed" "$tmp/bulk.log"; fi
if wait "$fm_pid"; then ok fast-math-compiles; else bad fast-math-compiles "nvcc failed" "$tmp/fm.log"; fi
if wait "$pair_pid"; then ok pair-combine-builds; else bad pair-combine-builds "nvcc failed" "$tmp/pair.log"; fi

# 4. the GPU-side script parses
if bash -n "$src/tests/runtime/gpu-failures.sh" 2>"$tmp/syntax.log"; then ok gpu-failures-parses; else bad gpu-failures-parses "bash -n" "$tmp/syntax.log"; fi

# host_run NAME PID PROGRAM WHY: a host program built in the background
# (PID, its log PROGRAM.log) runs and passes, or the test says WHY not
host_run() {
	local name=$1 pid=$2 prog=$3 why=$4
	if ! wait "$pid"; then
		bad "$name-builds" "nvcc failed" "$prog.log"
	elif "$prog" >"$prog.log" 2>&1; then
		ok "$name"
	else
		bad "$name" "$why" "$prog.log"
	fi
}

# 5. a division's shortcut, on the host
host_run div-rounded "$divr_pid" "$tmp/div_rounded" "some quotient rounds otherwise than a / d"

# 7. the staged operand's lanes, on the host
host_run staged-lanes "$lanes_pid" "$tmp/staged_lanes" "a lane reads another element than its pair"

# 8. a bf16 vector's lanes, on the host
host_run bf16-lanes "$bf16_pid" "$tmp/bf16_lanes" "some lane reads otherwise than __bfloat162float"

# 6. the campaign's batches (without a GPU only: with one, the campaign
# itself runs there)
if [ $gpu -eq 0 ]; then
	if NO_GPU=1 BATCH=2 bash "$src/tests/random/gpu-campaign.sh" "$fgc" 2 500000 "$tmp/campaign" 2 \
		>"$tmp/campaign.log" 2>&1 && grep -q '^4 passed, 0 as the plan' "$tmp/campaign.log"; then
		ok campaign-batches
	else
		bad campaign-batches "gpu-campaign.sh NO_GPU=1 BATCH=2" "$tmp/campaign.log"
	fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
