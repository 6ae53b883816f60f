# lib.sh - what the golden runners share (run-interp.sh, run-torch.sh:
# verdict, need_numpy; run-cuda-compile.sh, run-runtime.sh, run-lib.sh:
# need_nvcc; run-leaks.sh: skip;
# run-diag.sh, run-npy.sh: verdict_err, peak_memory_measurable),
# sourced after they set src (and py, pass and fail where they use them).

# verdict NAME LOG: PASS when LOG is empty, else FAIL with LOG indented.
verdict() {
	if [ ! -s "$2" ]; then
		echo "PASS $1"; pass=$((pass + 1))
	else
		echo "FAIL $1"; sed 's/^/    /' "$2" | head -n 20; fail=$((fail + 1))
	fi
}

# Stops the runner with one FAIL line when $py has no NumPy.
need_numpy() {
	if ! "$py" -c 'import numpy' 2>/dev/null; then
		echo "FAIL numpy: $py cannot import numpy (Debian: apt-get install python3-numpy)"
		echo "0 passed, 1 failed"
		exit 1
	fi
}

# skip WHY: the runner's tests did not run, and say so: exit status 77,
# which ctest reports as Skipped (SKIP_RETURN_CODE, tests/CMakeLists.txt),
# never as Passed.
skip() {
	echo "SKIP: $1"
	exit 77
}

# Puts nvcc on PATH (CUDA's usual place too), or skips the runner: tests
# of what WHAT names cannot run without it.
need_nvcc() {
	export PATH=$PATH:/usr/local/cuda/bin
	command -v nvcc >/dev/null 2>&1 || skip "nvcc not found; $1 did not run"
}

# verdict_err NAME WHY: PASS when WHY is empty, else FAIL with WHY and the
# head of fgc's stderr ($tmp/err).
verdict_err() {
	if [ -z "$2" ]; then
		echo "PASS $1"; pass=$((pass + 1))
	else
		echo "FAIL $1: $2"; head -n 6 "$tmp/err" | cut -c 1-300 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}

# Sets measure to 1 when /usr/bin/time can give fgc's ($fgc) peak memory,
# else to 0 with a note: missing, or a sanitized build, whose shadow
# memory would be counted.
peak_memory_measurable() {
	measure=1
	if [ ! -x /usr/bin/time ]; then
		echo "note: /usr/bin/time is missing; peak memory is not checked"
		measure=0
	elif grep -aqE '__(asan|ubsan|msan|tsan)_' "$fgc"; then
		echo "note: $fgc is built with sanitizers; peak memory is not checked"
		measure=0
	fi
}
