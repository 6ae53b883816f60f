#!/bin/bash
# run-diag.sh FGC SOURCE_DIR BUILD_DIR - diagnostics.  Each tests/diag/*.fg
# starts with `# expect: LINE:COL: error: TEXT`; `fgc check` on it must exit
# with status 1, print nothing on stdout, and print on stderr exactly one
# error line, `FILE:LINE:COL: error: ...TEXT...`, and a caret line.  Then
# extreme inputs made here at run time (deep nesting, huge identifiers and
# chains, random bytes, NUL, bad UTF-8, CRLF, ...) must each check cleanly
# or fail with status 1 and a located error: never a crash, never > 10 s.
# One PASS/FAIL line per file, then a total.
set -u
fgc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2 build=$3
tmp=$(mktemp -d "${build%/}/diag.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# check DIR FILE: runs `fgc check FILE` in DIR; sets rc, nerr to the
# number of `FILE:LINE:COL: error: ` lines and err to the first.
check() {
	(cd "$1" && exec timeout -k 2 10 "$fgc" check "$2") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	grep -aE "^${2//./\\.}:[0-9]+:[0-9]+: error: " "$tmp/err" >"$tmp/errs"
	nerr=$(wc -l <"$tmp/errs")
	err=$(head -n 1 "$tmp/errs")
}

# verdict NAME WHY: PASS when WHY is empty, else FAIL with fgc's stderr.
verdict() {
	if [ -z "$2" ]; then
		echo "PASS $1"; pass=$((pass + 1))
	else
		echo "FAIL $1: $2"; head -n 6 "$tmp/err" | cut -c 1-200 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}

for f in "$src"/tests/diag/*.fg; do
	name=$(basename "$f")
	want=$(sed -n '1s/^# expect: \([0-9]*:[0-9]*\): error: \(.*\)$/\1 \2/p' "$f")
	pos=${want%% *} text=${want#* }
	check "$src/tests/diag" "$name"
	why=""
	if [ -z "$want" ]; then why="first line is not '# expect: LINE:COL: error: TEXT'"
	elif [ "$rc" -ne 1 ]; then why="exit status $rc, expected 1"
	elif [ -s "$tmp/out" ]; then why="stdout is not empty"
	elif [ "$nerr" -ne 1 ]; then why="$nerr error lines, expected 1"
	elif [[ $err != "$name:$pos: error: "* ]]; then why="error not at $name:$pos"
	elif [[ $err != *"$text"* ]]; then why="error does not say '$text'"
	elif ! grep -aqE '^[[:space:]|0-9]*\^' "$tmp/err"; then why="no caret line"
	fi
	verdict "$name" "$why"
done

# Extremes.  Each is named NAME.WANT.fg: WANT is ok (must check), err (must
# fail with a located error) or any (either).
x=$tmp/extreme
mkdir "$x"
rep() { head -c "$2" /dev/zero | tr '\0' "$1"; }     # rep CHAR COUNT
top() { printf 'graph g {\n  input x : f32[3]\n'; }
end() { printf '\n  output y\n}\n'; }
for n in 1000 120000 1000000; do
	w=any; [ "$n" -eq 1000 ] && w=ok
	{ top; printf '  y = '; rep '(' "$n"; printf x; rep ')' "$n"; end; } >"$x/parens-$n.$w.fg"
done
{ top; printf '  y = '; rep '-' 120000; printf x; end; } >"$x/minus-120000.any.fg"
id=$(rep v 100000)
printf 'graph g {\n  input %s : f32[3]\n  y = exp(%s)\n  output y\n}\n' "$id" "$id" >"$x/ident-100000.ok.fg"
{ top; printf '  y = x'; yes ' + x' | head -n 999999 | tr -d '\n'; end; } >"$x/chain-1000000.ok.fg"
RANDOM=42
bytes=""
for ((i = 0; i < 65536; i++)); do printf -v b '\\x%02x' $((RANDOM % 256)); bytes+=$b; done
printf '%b' "$bytes" >"$x/random-64k.any.fg"
{ top; printf '  y = '; printf '%b' "$bytes"; } >"$x/random-after-prefix.any.fg"
{ top; printf '  y = x\0 + x'; end; } >"$x/nul-in-statement.err.fg"
{ top; printf '  y\xc3\x28 = exp(x)'; end; } >"$x/bad-utf8-name.err.fg"
{ top; printf '  y = exp(x)'; end; } | sed 's/$/\r/' >"$x/crlf.ok.fg"
{ top; printf '  y = exp(x)\n  output y\n}'; } >"$x/no-final-newline.ok.fg"
: >"$x/empty.err.fg"
printf '# only a comment\n\n   # and another\n' >"$x/only-comments.err.fg"
{ top; printf '  y = x * 1e999'; end; } >"$x/real-1e999.any.fg"
printf 'graph g {\n  input x : f32[1%s]\n  y = exp(x)\n  output y\n}\n' "$(rep 0 30)" >"$x/dim-1e30.err.fg"

for f in "$x"/*.fg; do
	name=$(basename "$f") w=${name%.fg}; w=${w##*.}
	check "$x" "$name"
	why=""
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="took more than 10 s"
	elif [ "$rc" -ge 2 ]; then why="exit status $rc (a crash?)"
	elif [ "$rc" -eq 0 ] && [ "$w" = err ]; then why="accepted; an error was expected"
	elif [ "$rc" -eq 1 ] && [ "$w" = ok ]; then why="rejected; it is valid"
	elif [ "$rc" -eq 1 ] && [ "$nerr" -eq 0 ]; then why="no located error line"
	fi
	[ -z "$why" ] || cp "$f" "${build%/}/diag-failed-$name"
	verdict "extreme/$name" "$why"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
