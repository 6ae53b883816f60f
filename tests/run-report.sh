#!/bin/bash
# run-report.sh FGC SOURCE_DIR BUILD_DIR - the report's facts against what
# compile emits (issue 18): for every samples/*.fg and tests/gpu/*.fg at
# their `# test-dims:` sizes, fused and --no-fuse, each group's launches in
# `fgc report --format json` equal the number of rows the group has in the
# fg_launches[] table of `fgc compile`'s .cu (kernels and cuBLASLt calls),
# and a group whose .cu uses scratch (ctx->scratch) reports more bytes than
# its reads and writes; a group's largest launch of a kernel fgc sized
# (its "launch") is an fg_launch(kernel, grid, block, smem, ...) of the .cu, in its
# clusters, its blocks a multiprocessor and waves the bounds the block
# limit, its threads and shared memory set; the graphs with a matmul
# again under --gemm cublaslt and --gemm fgc (the report follows
# compile's choice).  One
# PASS/FAIL line per graph and flag set.  Then fgc report --measured on the
# binaries' timings in tests/measured.
set -u
fgc=$1 src=$2 build=$3
tmp=$(mktemp -d "${build%/}/report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

one() {         # one FILE FLAG...: prints PASS or FAIL lines
	local fg=$1 name out
	shift
	name=$(basename "$fg" .fg)$(printf '.%s' "$@" | tr -d -- -)       # x, x.nofuse, x.gemm.fgc
	out=$tmp/$name
	# each case writes its own file: lines that parallel cases appended to
	# one shared file could run together ("PASS a (1 launches)PASS b ..."),
	# and the count below then missed one (CI, stop 35)
	exec >"$out.res" 2>&1
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
# a group's largest launch of fgc's own kernels: its fg_launch(kernel, grid, block, smem)
# in the .cu, its cluster's dims, and the bounds recomputed here
shapes = 0
for g in report["groups"]:
    l = g.get("launch")
    if not l:
        continue
    shapes += 1
    if not re.search(r"fg_launch\(\w+, %d, %d, %d, ctx->stream" % (l["grid"], l["block"], l["smem"]), cu):
        bad.append("group %d: no launch fg_launch(kernel, %d, %d, %d, ...) in the .cu" % (g["id"], l["grid"], l["block"], l["smem"]))
    if l["cluster"] > 1 and "__cluster_dims__(%d, 1, 1)" % l["cluster"] not in cu:
        bad.append("group %d: no cluster of %d in the .cu" % (g["id"], l["cluster"]))
    most = min(2048 // l["block"], 32)
    if l["smem"] > 0:
        most = min(most, (228 << 10) // (l["smem"] + 1024))
    if l["per_sm_most"] != most or abs(l["waves_least"] - l["grid"] / (most * 132)) > 1e-3:
        bad.append("group %d: %d blocks a multiprocessor, %g waves; %d and %g here" % (
            g["id"], l["per_sm_most"], l["waves_least"], most, l["grid"] / (most * 132)))
if "fg_launch(" in cu and not shapes:
    bad.append("the .cu launches kernels of its own, but no group reports a launch's shape")
if "ctx->scratch" in cu and all(g["bytes"] <= g["bytes_read"] + g["bytes_written"] for g in report["groups"]):
    bad.append("the .cu uses scratch, but no group reports more bytes than its reads and writes")
print("FAIL %s: %s" % (name, "; ".join(bad)) if bad else "PASS %s (%d launches)" % (name, len(rows)))
PY
}
export -f one
export fgc tmp
ls "$src"/samples/*.fg "$src"/tests/gpu/*.fg | while read -r f; do printf '%s\n%s --no-fuse\n' "$f" "$f"; done >"$tmp/cases"
grep -l 'matmul(' "$src"/samples/*.fg "$src"/tests/gpu/*.fg |
	while read -r f; do printf '%s --gemm cublaslt\n%s --gemm fgc\n' "$f" "$f"; done >>"$tmp/cases"
xargs -P "$(nproc)" -I{} bash -c 'one {}' <"$tmp/cases"
cat "$tmp"/*.res >"$tmp/all.log"

# fgc report --measured on the binaries' timings of tests/measured (made on
# the H200 by tests/measured/README.md's command): every group gets its
# measured time, the JSON's add up to the launches' in the file; and each
# broken copy of a file gets one located error and exit 1.
measured() {    # measured NAME: PASS or FAIL lines
	local name=$1 json=$src/tests/measured/$1.bench.json fg=$src/samples/$1.fg out=$tmp/m.$1
	if ! "$fgc" report "$fg" --measured "$json" >"$out.txt" 2>&1 ||
		! "$fgc" report "$fg" --measured "$json" --format json >"$out.json" 2>>"$out.txt"; then
		echo "FAIL measured $name: fgc report failed"; sed 's/^/    /' "$out.txt" | head -5
		return
	fi
	python3 - "$out.txt" "$out.json" "$json" "$name" <<'PY' || echo "FAIL measured $name: the check itself failed"
import json, sys
text, report, timings, name = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
bad = []
if text.count("\n  measured: ") != len(report["groups"]):
    bad.append("not one measured: line per group")
per = {}
for l in timings["launches"]:
    per[l["group"]] = per.get(l["group"], 0) + l["ms"] * 1e3
for g in report["groups"]:
    if abs(g["measured_us"] - per.get(g["id"], 0)) > 1e-3:
        bad.append("group %d: measured %g us, the file's launches %g" % (g["id"], g["measured_us"], per.get(g["id"], 0)))
if report["measured"]["runs"] != timings["runs"]:
    bad.append("runs")
print("FAIL measured %s: %s" % (name, "; ".join(bad)) if bad else "PASS measured %s (%d groups)" % (name, len(report["groups"])))
PY
	# broken copies: each must give one error, located, and exit 1
	local k=0
	while IFS='|' read -r what edit want; do
		k=$((k + 1))
		sed -e "$edit" "$json" >"$out.bad$k.json"
		"$fgc" report "$fg" --measured "$out.bad$k.json" >"$out.bad$k.out" 2>"$out.bad$k.err"
		local rc=$? errs
		errs=$(grep -c 'error: ' "$out.bad$k.err")
		if [ $rc -eq 1 ] && [ "$errs" -eq 1 ] && [ ! -s "$out.bad$k.out" ] &&
			grep -q "bad$k.json:[0-9]*:[0-9]*: error: .*$want" "$out.bad$k.err"; then
			echo "PASS measured $name: $what"
		else
			echo "FAIL measured $name: $what (exit $rc, $errs errors, wanted '$want'):"
			sed 's/^/    /' "$out.bad$k.err" | head -4
		fi
	done <<EOF2
a truncated file|\$d|the file ends here
another graph|s/"graph": "$name"/"graph": "other"/|timings of graph 'other', not of '$name'
another size|0,/"shape": \[\([0-9]*\)/s//"shape": [\17/|was timed at another shape
a launch less|0,/{"group"/{/{"group"/d}|launches, where the plan has
a group past the plan|0,/"group": 0/s//"group": 99/|group 99: the plan has groups 0 to
a negative time|0,/"ms": /s//"ms": -/|"ms": expected a number of at least 0
not JSON|1s/{/[/|expected ',' or ']' in this array
EOF2
}
export -f measured
for f in "$src"/tests/measured/*.bench.json; do
	n=$(basename "$f" .bench.json)
	measured "$n" >>"$tmp/all.log" 2>&1
	echo "$n" >>"$tmp/cases.m"
done

sort "$tmp/all.log"
cases=$(( $(grep -c . "$tmp/cases") + 8 * $(grep -c . "$tmp/cases.m") ))
pass=$(grep -c '^PASS' "$tmp/all.log") fail=$(grep -c '^FAIL' "$tmp/all.log")
echo "$pass passed, $fail failed, of $cases"
[ "$fail" -eq 0 ] && [ "$pass" -eq "$cases" ]
