#!/bin/bash
# run-coverage.sh FGC SOURCE_DIR BUILD_DIR - every emitter path has a GPU
# test (issue 19, part 5).  The paths are compiler/cuda/cuda.h's CU_PATHS
# table (index width, kind and strategy, tile and schedule, epilogue); the
# GPU tests are what `make -f Makefile.gpu check` runs: every sample at its
# test dims and every tests/gpu/*.fg, fused, --no-fuse and, for matmul
# models, --gemm fgc.  Their .cu files are written here (`make -f
# Makefile.gpu sources`: fgc only), each ending with the paths its program
# took; one line per path with the programs that reach it, and FAIL for a
# path none reaches, or a reduction path (rowreduce.*, reduce.*) that fewer
# than two test graphs reach: a reduction is held at two shapes at least.
# Extend CU_PATHS as kinds land, and a test graph with them.
set -u
fgc=$(realpath "$1") src=$2 build=$3
tmp=$(mktemp -d "${build%/}/coverage.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! make -s -C "$src" -f Makefile.gpu FGC="$fgc" GPUOUT="$tmp" sources -j"$(nproc)" >"$tmp/make.log" 2>&1; then
	echo "FAIL make -f Makefile.gpu sources:"; tail -20 "$tmp/make.log"
	exit 1
fi
paths=$(sed -n '/^#define CU_PATHS(X)/,/^$/p' "$src/compiler/cuda/cuda.h" | sed -n 's/.*X([A-Z0-9_x]*, "\([^"]*\)").*/\1/p')
[ -n "$paths" ] || { echo "FAIL no CU_PATHS table in compiler/cuda/cuda.h"; exit 1; }
pass=0 fail=0
for p in $paths; do
	hits=$(grep -l -- "^/\* emitter paths:.* $p\( .*\)\? \*/$" "$tmp"/*.cu "$tmp"/*/*.cu 2>/dev/null |
		sed "s|^$tmp/||; s|\.cu$||" | sort | tr '\n' ' ')
	graphs=$(tr ' ' '\n' <<<"$hits" | sed 's|.*/||; s/\..*//' | sort -u | grep -c .)
	least=1
	case $p in rowreduce.* | reduce.*) least=2 ;; esac
	if [ -n "$hits" ] && [ "$graphs" -lt "$least" ]; then
		echo "FAIL $p: $graphs test graph ($hits), a reduction path needs $least"
		fail=$((fail + 1))
	elif [ -n "$hits" ]; then
		n=$(wc -w <<<"$hits")
		echo "PASS $p: $n programs of $graphs graphs ($(cut -d' ' -f1-6 <<<"$hits")$([ "$n" -gt 6 ] && echo ...))"
		pass=$((pass + 1))
	else
		echo "FAIL $p: no GPU test program reaches it"
		fail=$((fail + 1))
	fi
done
# every program says which paths it took: a .cu without the line is a bug
for f in "$tmp"/*.cu; do
	grep -q '^/\* emitter paths: ' "$f" || { echo "FAIL ${f#$tmp/}: no emitter paths line"; fail=$((fail + 1)); }
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
