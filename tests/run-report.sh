#!/bin/bash
# run-report.sh FGC SOURCE_DIR BUILD_DIR - the report's facts against what
# compile emits (issue 18): for every samples/*.fg and tests/gpu/*.fg at
# their `# test-dims:` sizes, fused and --no-fuse, each group's launches in
# `fgc report --format json` equal the number of rows the group has in the
# fg_launches[] table of `fgc compile`'s .cu (kernels and cuBLASLt calls),
# and a group whose .cu uses scratch (ctx->scratch) reports more bytes than
# its reads and writes.  One PASS/FAIL line per graph and flag set.
set -u
fgc=$1 src=$2 build=$3
tmp=$(mktemp -d "${build%/}/report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

one() {         # one FILE FLAG...: prints PASS or FAIL lines
	local fg=$1 name out
	shift
	name=$(basename "$fg" .fg)${1:+.nofuse}
	out=$tmp/$name
	read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
	if ! "$fgc" report --format json "$@" "${dims[@]}" "$fg" >"$out.json" 2>"$out.log" ||
		! "$fgc" compile "$@" "${dims[@]}" "$fg" -o "$out" >>"$out.log" 2>&1; then
		echo "FAIL $name: fgc failed"; sed 's/^/    /' "$out.log" | head -5
		return
	fi
	python3 - "$out.json" "$out.cu" "$name" <<'PY' || echo "FAIL $name: the check itself failed (above)"
import json, re, sys
report, cu, name = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
table = re.search(r"fg_launches\[\] = \{(.*?)\n\};", cu, re.S)
rows = re.findall(r'\{"[^"]*", (\d+), ', table.group(1)) if table else []
emitted = {}
for g in rows:
    emitted[int(g)] = emitted.get(int(g), 0) + 1
bad = []
for g in report["groups"]:
    if g["launches"] != emitted.get(g["id"], 0):
        bad.append("group %d: report %d launches, the .cu's table %d" % (g["id"], g["launches"], emitted.get(g["id"], 0)))
if "ctx->scratch" in cu and all(g["bytes"] <= g["bytes_read"] + g["bytes_written"] for g in report["groups"]):
    bad.append("the .cu uses scratch, but no group reports more bytes than its reads and writes")
print("FAIL %s: %s" % (name, "; ".join(bad)) if bad else "PASS %s (%d launches)" % (name, len(rows)))
PY
}
export -f one
export fgc tmp
ls "$src"/samples/*.fg "$src"/tests/gpu/*.fg | while read -r f; do printf '%s\n%s --no-fuse\n' "$f" "$f"; done >"$tmp/cases"
xargs -P "$(nproc)" -I{} bash -c 'one {}' <"$tmp/cases" >"$tmp/all.log" 2>&1
sort "$tmp/all.log"
cases=$(grep -c . "$tmp/cases") pass=$(grep -c '^PASS' "$tmp/all.log") fail=$(grep -c '^FAIL' "$tmp/all.log")
echo "$pass passed, $fail failed, of $cases"
[ "$fail" -eq 0 ] && [ "$pass" -eq "$cases" ]
