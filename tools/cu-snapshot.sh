#!/usr/bin/env bash
# cu-snapshot.sh FGC OUT [RANDOM] - what a compiler writes, to compare two
# compilers byte for byte (a refactoring must not change it): into OUT, the
# .cu that `FGC compile` writes for every samples/*.fg (at its test dims and
# at its default sizes), every tests/gpu, tests/fuse and tests/random/regress
# graph, and RANDOM random graphs (tests/random/gen_graph.py seeds 1..RANDOM,
# default 200), each under six flag sets (none, --no-fuse, --gemm fgc,
# --gemm cublaslt, --tf32, --tf32 --gemm fgc), with compile's stderr and
# status; their text and JSON reports (plain, --tf32, --no-fuse), the DOT one; and
# emit-torch's module.  The random graphs are written to OUT/../random-graphs
# so that two snapshots name the same sources.  Then:
#   tools/cu-snapshot.sh old/fgc /tmp/a && tools/cu-snapshot.sh build/fgc /tmp/b && diff -r /tmp/a /tmp/b
set -u
fgc=$(realpath "$1") out=$2 nrandom=${3:-200}
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$out"
graphs=$(dirname "$(realpath "$out")")/random-graphs
mkdir -p "$graphs"
flagsets=("" "--no-fuse" "--gemm fgc" "--gemm cublaslt" "--tf32" "--tf32 --gemm fgc")
emit() {        # emit NAME SOURCE DIMS...: compile under every flag set
	local name=$1 src=$2 i=0
	shift 2
	for fl in "${flagsets[@]}"; do
		# shellcheck disable=SC2086
		"$fgc" compile "$src" "$@" $fl -o "$out/$name.$i" >"$out/$name.$i.log" 2>&1
		echo "rc=$?" >>"$out/$name.$i.log"
		i=$((i + 1))
	done
}
sources=(samples/*.fg tests/gpu/*.fg tests/random/regress-*.fg tests/fuse/*.fg)
for seed in $(seq 1 "$nrandom"); do
	/usr/bin/python3 tests/random/gen_graph.py "$seed" -o "$graphs/g$seed.fg" >/dev/null 2>&1 &&
		sources+=("$graphs/g$seed.fg")
done
for s in "${sources[@]}"; do
	n=$(basename "$s" .fg)
	read -ra dims < <(sed -n 's/^# test-dims://p' "$s")
	read -ra cflags < <(sed -n 's/^# compile-flags://p' "$s")
	emit "t.$n" "$s" "${dims[@]}" "${cflags[@]}"
	case $s in samples/*) emit "d.$n" "$s" "${cflags[@]}" ;; esac
	for fl in "" --tf32 --no-fuse; do
		"$fgc" report "$s" "${dims[@]}" $fl >"$out/rep.$n.${fl:-plain}.txt" 2>&1
		"$fgc" report "$s" "${dims[@]}" $fl --format json >"$out/rep.$n.${fl:-plain}.json" 2>&1
	done
	"$fgc" report "$s" "${dims[@]}" --format dot >"$out/rep.$n.dot" 2>&1
	"$fgc" emit-torch "$s" "${dims[@]}" -o "$out/$n.py" >"$out/$n.py.log" 2>&1
done
echo "$(ls "$out"/*.cu 2>/dev/null | wc -l) .cu files in $out"
