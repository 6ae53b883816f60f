# lib.sh - what the Python-backed golden runners (run-interp.sh,
# run-torch.sh) share; sourced after they set py, pass and fail.

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
