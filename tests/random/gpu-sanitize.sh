#!/usr/bin/env bash
# gpu-sanitize.sh FGC N SEED OUTDIR [JOBS] - compute-sanitizer on the GPU:
# initcheck on the fused binary of every sample (built beforehand by
# `make -f Makefile.gpu`, in out/gpu/), then memcheck, racecheck and
# initcheck on the fused binaries of random graphs SEED .. SEED+N-1
# (gen_graph.py), JOBS at a time.  Writes OUTDIR/initcheck-samples.log and
# OUTDIR/sanitize-random.log, one line per binary and tool: the tool's
# summary line.  Run from the repository root; needs nvcc and a GPU.
set -u
fgc=$(realpath "$1") n=$2 seed0=$3 out=$4 jobs=${5:-$(nproc)}
nvcc=${NVCC:-nvcc}
flags="-O3 -gencode=arch=compute_90a,code=sm_90a -Iruntime"
mkdir -p "$out/rt" || exit 1
ls samples/*.fg | xargs -n1 basename | sed 's/\.fg$//' |
	xargs -P "$jobs" -I{} sh -c 'compute-sanitizer --tool initcheck out/gpu/{} --seed 7 >"$0/ic.{}.log" 2>&1;
		echo "initcheck {}: $(tail -1 "$0/ic.{}.log")"' "$out" >"$out/initcheck-samples.log" 2>&1
for f in fgrt_lib.cu fgrt_main.cu npy.c half.c check.c; do
	$nvcc $flags -D_POSIX_C_SOURCE=200809L -c "runtime/$f" -o "$out/rt/${f%.*}.o" || exit 1
done
one() {
	local s=$1 g=$out/g$1 t
	python3 tests/random/gen_graph.py "$s" -o "$g.fg" --fgc "$fgc" >/dev/null 2>&1 || { echo "SKIP $s"; return; }
	if ! "$fgc" compile "$g.fg" -o "$g" >/dev/null 2>&1 ||
		! $nvcc $flags "$g.cu" "$out"/rt/*.o -lcublasLt -o "$g.bin" >/dev/null 2>&1; then
		echo "BUILD-FAIL $s"
		return
	fi
	for t in memcheck racecheck initcheck; do
		compute-sanitizer --tool $t "$g.bin" --seed "$s" >"$g.$t.log" 2>&1
		echo "$t $s: $(tail -1 "$g.$t.log")"
	done
}
export -f one
export fgc out nvcc flags
seq "$seed0" $((seed0 + n - 1)) | xargs -P "$jobs" -I{} bash -c 'one {}' >"$out/sanitize-random.log" 2>&1
cat "$out/initcheck-samples.log" "$out/sanitize-random.log"
