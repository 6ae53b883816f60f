#!/bin/bash
# run-npy.sh FGC SOURCE_DIR BUILD_DIR - hostile .npy files given to `fgc run`
# (testing.md, ".npy, defensively"; issue 5, part 2).
#
# tests/npy/cases.txt (written with the files by tests/npy/make_bad_npy.py)
# lists each crafted file, the declaration of the one input x of the graph
#   graph g { input x : DECL   y = x   output y }
# it is given to, and whether it must be accepted or rejected.  Each file
# is copied to a fresh DIR/x.npy and fgc runs
#   fgc run g.fg --inputs DIR --outputs OUT
# A rejected file must give exit status 1, an `error:` line that names
# x.npy and says the case's text, no crash or sanitizer report, no OUT
# directory (nothing half-written) and nothing new in DIR.  An accepted
# file must give status 0 and OUT/y.npy holding the same data bytes.
# Every run must stay under 64 MB of peak memory (not checked for a
# sanitizer build or without /usr/bin/time) and 10 s.
#
# Then the cases that cannot be committed: a directory named x.npy, a
# symlink to /dev/zero, an unreadable file (skipped as root), and those
# make_bad_npy.py --big writes (a header over 1 MiB).  Before all that,
# make_bad_npy.py --check proves the committed files are what the script
# writes (skipped with a note when python3 is missing).
# One PASS/FAIL line per case, then a total.
set -u
fgc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2 build=$3
py=${PYTHON:-python3}
tmp=$(mktemp -d "${build%/}/npy.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
limit_kb=65536

. "$src/tests/lib.sh"
peak_memory_measurable

# graph DECL: the graph file for an input x declared DECL.
graph() {
	local g=$tmp/g-${1//[^a-z0-9]/_}.fg
	[ -f "$g" ] || printf 'graph g {\n  input x : %s\n  y = x\n  output y\n}\n' "$1" >"$g"
	echo "$g"
}

# run DECL: `fgc run` on a graph with input x : DECL, inputs from $tmp/in,
# outputs to $tmp/out (which must not exist).  Sets rc, kb, san.
run() {
	local t=()
	[ "$measure" -eq 1 ] && t=(/usr/bin/time -f %M -o "$tmp/mem")
	: >"$tmp/mem"
	timeout -k 2 10 "${t[@]}" "$fgc" run "$(graph "$1")" --inputs "$tmp/in" \
		--outputs "$tmp/out" >"$tmp/stdout" 2>"$tmp/err"
	rc=$?
	kb=0
	local l
	while read -r l; do [[ $l =~ ^[0-9]+$ ]] && kb=$l; done <"$tmp/mem"
	san=0
	grep -aqE '(ERROR|WARNING): [A-Za-z]+Sanitizer|: runtime error: ' "$tmp/err" && san=1
}

# rejected TEXT: sets why unless the last run rejected x.npy saying TEXT
# and left nothing behind.
rejected() {
	why=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="took more than 10 s"
	elif [ "$san" -eq 1 ]; then why="sanitizer report"
	elif [ "$rc" -eq 0 ]; then why="accepted; it must be rejected"
	elif [ "$rc" -ne 1 ]; then why="exit status $rc (a crash?)"
	elif ! grep -aE 'error: .*x\.npy' "$tmp/err" | grep -aqF -- "$1"; then
		why="no error line naming x.npy and saying '$1'"
	elif [ -e "$tmp/out" ]; then why="a failed run left $tmp/out behind"
	elif [ "$(ls -A "$tmp/in")" != x.npy ]; then why="the input directory changed: $(ls -A "$tmp/in" | tr '\n' ' ')"
	elif [ "$measure" -eq 1 ] && [ "$kb" -gt "$limit_kb" ]; then
		why="peak memory $((kb / 1024)) MB, bound $((limit_kb / 1024)) MB"
	fi
}

# data_of FILE: the data bytes of a .npy file, as hex (after the preamble
# that its header length gives).
data_of() {
	local v hl
	v=$(od -An -tu1 -j6 -N1 "$1" | tr -d ' ')
	if [ "$v" = 1 ]; then
		hl=$(od -An -tu2 -j8 -N2 --endian=little "$1" | tr -d ' ')
		od -An -tx1 -v -j $((10 + hl)) "$1"
	else
		hl=$(od -An -tu4 -j8 -N4 --endian=little "$1" | tr -d ' ')
		od -An -tx1 -v -j $((12 + hl)) "$1"
	fi | tr -s ' \n' ' '
}

# accepted FILE: sets why unless the last run accepted FILE and wrote
# y.npy holding the same data.
accepted() {
	why=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="took more than 10 s"
	elif [ "$san" -eq 1 ]; then why="sanitizer report"
	elif [ "$rc" -ne 0 ]; then why="rejected (status $rc); it is valid"
	elif [ ! -f "$tmp/out/y.npy" ]; then why="no y.npy written"
	elif [ "$(data_of "$1")" != "$(data_of "$tmp/out/y.npy")" ]; then
		why="y.npy's data differs from the input's"
	elif [ "$measure" -eq 1 ] && [ "$kb" -gt "$limit_kb" ]; then
		why="peak memory $((kb / 1024)) MB, bound $((limit_kb / 1024)) MB"
	fi
}

fresh() {
	chmod -R u+rwx "$tmp/in" 2>/dev/null
	rm -rf "$tmp/in" "$tmp/out"
	mkdir "$tmp/in"
}

# The committed files are what the generator writes.
if command -v "$py" >/dev/null 2>&1; then
	if "$py" "$src/tests/npy/make_bad_npy.py" --check >"$tmp/err" 2>&1; then
		verdict_err "make_bad_npy.py --check" ""
	else
		verdict_err "make_bad_npy.py --check" "the committed files differ from the generator's"
	fi
else
	echo "note: $py is missing; make_bad_npy.py --check and the --big cases are skipped"
	py=""
fi

# table DIR: runs every case of DIR/cases.txt.
table() {
	local dir=$1 file decl verdict text n=0
	while IFS=$'\t' read -r file decl verdict text; do
		[[ $file == \#* || -z $file ]] && continue
		n=$((n + 1))
		fresh
		cp "$dir/$file" "$tmp/in/x.npy"
		run "$decl"
		if [ "$verdict" = accept ]; then accepted "$dir/$file"; else rejected "$text"; fi
		verdict_err "npy/$file" "$why"
	done <"$dir/cases.txt"
	[ "$n" -gt 0 ] || verdict_err "$dir/cases.txt" "no cases"
}
table "$src/tests/npy"

# What a repository cannot hold.
fresh
mkdir "$tmp/in/x.npy"
run 'f32[4, 3]'
rejected "is a directory, not a .npy file"
verdict_err "runtime/directory-named-x.npy" "$why"

fresh
ln -s /dev/zero "$tmp/in/x.npy"
run 'f32[4, 3]'
rejected "not a regular file"
verdict_err "runtime/symlink-to-dev-zero" "$why"

if [ "$(id -u)" != 0 ]; then
	fresh
	cp "$src/tests/npy/ok-v1-numpy.npy" "$tmp/in/x.npy"
	chmod 000 "$tmp/in/x.npy"
	run 'f32[4, 3]'
	rejected "cannot open: Permission denied"
	verdict_err "runtime/unreadable" "$why"
else
	echo "note: running as root: the unreadable-file case is skipped"
fi

if [ -n "$py" ]; then
	if "$py" "$src/tests/npy/make_bad_npy.py" --big "$tmp/big" >"$tmp/err" 2>&1; then
		table "$tmp/big"
	else
		verdict_err "make_bad_npy.py --big" "failed"
	fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
