#!/usr/bin/env bash
# run-cuda-compile.sh FGC SOURCE_DIR BUILD_DIR - the CUDA backend without a
# GPU: for every samples/*.fg and every tests/gpu/*.fg (at its
# `# test-dims:` sizes, with its `# compile-flags:`), fused and --no-fuse,
#   1. `fgc compile` writes NAME.cu, and the same bytes a second time,
#      each kernel in it waiting for the one before (pdl_unsafe, below);
#   2. nvcc compiles it for sm_90a with warnings as errors, and ptxas
#      (-Xptxas -v) reports no kernel that spills registers to local memory,
# so that code generation that does not compile, or that the register
# estimate lets spill, fails CI.  A model past 2^31
# elements checks the 64-bit index path the same way, one model is
# linked with the runtime (fgrt_lib.cu, fgrt_main.cu, npy.c, half.c, check.c),
# and one compiled against tools/attn_probe.py's probed runtime.
#
# Speed: nvcc spends most of a small file's time parsing the CUDA headers,
# so the models are compiled as two translation units (each model in a
# namespace of its own), both at once; when one fails, its models are
# compiled one by one to name the culprits.  Without nvcc (looked for on
# PATH and in /usr/local/cuda/bin) every test is skipped.
set -u
fgc=$1 src=$2 build=$3
. "$src/tests/lib.sh"
need_nvcc "the CUDA compile tests"
tmp=$(mktemp -d "${build%/}/cuda-compile.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
nvflags=(-gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -I"$src/runtime")
pass=0 fail=0

# Shapes past 2^31 elements take the 64-bit index path, which no test can
# run on the reference interpreter at that size: compiled here only.
cat >"$tmp/big-index-64bit.fg" <<'EOF'
graph big_index_64bit {
  input x : f16[3, 1000000000]
  input b : f16[1000000000]
  y = softmax(x) + b
  s = sum(x, axis=0)
  t = sum(x)
  z = transpose(reshape(x * 2.0 + b, shape=[3, 1000, 1000000]), perm=[2, 0, 1])
  output y, s, t, z
}
EOF

# Programmatic dependent launch is safe only if every kernel fgc writes
# waits for the one before it before any load or store: fg_grid_wait its
# first statement, and every launch fg_launch's (the only one that lets a
# kernel start early); what breaks that, one line each.
pdl_unsafe() {  # pdl_unsafe FILE
	awk '/^__global__/ { k = 1; n++; next }
	     k == 1 && /^\{$/ { k = 2; next }
	     k == 2 { if ($0 != "\tfg_grid_wait();") print "a kernel whose first statement is not fg_grid_wait: " $0; k = 0 }
	     /<<</ { print "a launch that is not fg_launch: " $0 }
	     /fg_launch\(/ { l++ }
	     END { if (n && !l) print n " kernels and no fg_launch" }' "$1"
}

# 1. fgc compile, twice.
names=()
declare -A why
for fg in "$src"/samples/*.fg "$src"/tests/gpu/*.fg "$tmp/big-index-64bit.fg"; do
	[ -e "$fg" ] || continue
	base=$(basename "$fg" .fg)
	read -ra dims < <(sed -n 's/^# test-dims://p' "$fg")
	read -ra cflags < <(sed -n 's/^# compile-flags://p' "$fg")
	for variant in fused nofuse; do
		name=$base flags=("${dims[@]}" "${cflags[@]}")
		if [ $variant = nofuse ]; then name=$base.nofuse flags+=(--no-fuse); fi
		names+=("$name")
		out=$tmp/$name log=$tmp/$name.log
		if ! "$fgc" compile "$fg" "${flags[@]}" -o "$out" >"$log" 2>&1; then
			why[$name]="fgc compile failed"
		elif ! "$fgc" compile "$fg" "${flags[@]}" -o "$out.again" >>"$log" 2>&1 ||
			! cmp -s "$out.cu" "$out.again.cu"; then
			why[$name]="a second fgc compile wrote different bytes"
		elif [ -n "$(pdl_unsafe "$out.cu")" ]; then
			why[$name]="$(pdl_unsafe "$out.cu" | head -1)"
		fi
	done
done

# 2. nvcc: two translation units at once, then one by one where one failed.
unit() {        # unit FILE NAME...: includes each model in a namespace
	local f=$1 i=0
	shift
	printf '#include "fg_device.cuh"\n#include "fg_gemm_sm90.cuh"\n#include "fg_attn_sm90.cuh"\n' >"$f"
	for name in "$@"; do
		i=$((i + 1))
		printf 'namespace model%d {\n#include "%s.cu"\n}\n' "$i" "$name" >>"$f"
	done
}
ok=()
for name in "${names[@]}"; do [ -z "${why[$name]:-}" ] && ok+=("$name"); done
half=$(((${#ok[@]} + 1) / 2))
units=(unit1 unit2)
unit "$tmp/unit1.cu" "${ok[@]:0:$half}"
unit "$tmp/unit2.cu" "${ok[@]:$half}"
for u in "${units[@]}"; do
	nvcc "${nvflags[@]}" -Xptxas -v -c "$tmp/$u.cu" -o "$tmp/$u.o" >"$tmp/$u.log" 2>&1 &
done
wait
# ptxas -v: "Compiling entry function 'NAME'", later "N bytes spill stores"
spills() {
	awk '/Compiling entry function/ { f = $0; sub(/.*function ./, "", f); sub(/. for .*/, "", f) }
	     /bytes spill stores/ && ($5 + 0 > 0 || $9 + 0 > 0) { print f ": " $0 }' "$@"
}
for u in "${units[@]}"; do
	[ -e "$tmp/$u.o" ] || continue
	if [ -n "$(spills "$tmp/$u.log")" ]; then
		why[$u]="ptxas spills registers in $(spills "$tmp/$u.log" | cut -d: -f1 | sort -u | tr '\n' ' ')"
		spills "$tmp/$u.log" >>"$tmp/$u.spills"
		cp "$tmp/$u.spills" "$tmp/$u.log"
		names+=("$u")
	fi
done
for u in "${units[@]}"; do
	[ -e "$tmp/$u.o" ] && continue
	if [ $u = unit1 ]; then members=("${ok[@]:0:$half}"); else members=("${ok[@]:$half}"); fi
	alone=0
	for name in "${members[@]}"; do
		if ! nvcc "${nvflags[@]}" -c "$tmp/$name.cu" -o "$tmp/$name.o" >>"$tmp/$name.log" 2>&1; then
			why[$name]="nvcc could not compile $name.cu"
			alone=1
		fi
	done
	# no model fails alone: the unit itself did (a clash between models)
	[ $alone -eq 1 ] || { why[$u]="nvcc failed on the combined $u.cu"; names+=("$u"); }
done

# 3. One model linked with the runtime: the program table's contract.
link="gemm-batched"
rt=()
for f in fgrt_lib.cu fgrt_main.cu npy.c half.c check.c; do
	o=$tmp/rt_${f%.*}.o
	if ! nvcc "${nvflags[@]}" -D_POSIX_C_SOURCE=200809L -c "$src/runtime/$f" -o "$o" >>"$tmp/runtime.log" 2>&1; then
		why[runtime]="nvcc could not compile runtime/$f"
	fi
	rt+=("$o")
done
if [ -z "${why[runtime]:-}" ] && [ -e "$tmp/$link.cu" ] &&
	! { nvcc "${nvflags[@]}" -c "$tmp/$link.cu" -o "$tmp/$link.o" &&
	    nvcc -gencode=arch=compute_90a,code=sm_90a "$tmp/$link.o" "${rt[@]}" -lcublasLt -o "$tmp/$link.bin"; } \
	>>"$tmp/runtime.log" 2>&1; then
	why[runtime]="$link.cu does not link with the runtime"
fi

# 4. tools/attn_probe.py's copy of the runtime, its probes in the attention
# kernel, still applies (its anchors found) and compiles.
probe="attention-shapes"
if ! python3 "$src/tools/attn_probe.py" runtime "$tmp/probe-rt" >"$tmp/probe.log" 2>&1 ||
	! nvcc -gencode=arch=compute_90a,code=sm_90a -Werror all-warnings -I"$tmp/probe-rt" -c "$tmp/$probe.cu" \
		-o "$tmp/probe.o" >>"$tmp/probe.log" 2>&1; then
	why[probe]="tools/attn_probe.py's runtime does not compile $probe.cu"
fi

for name in "${names[@]}" runtime probe; do
	if [ -n "${why[$name]:-}" ]; then
		echo "FAIL $name: ${why[$name]}"
		log=$tmp/$name.log
		sed 's/^/    /' "$log" 2>/dev/null | grep -v '^    $' | head -30
		fail=$((fail + 1))
	else
		echo "PASS $name"
		pass=$((pass + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
