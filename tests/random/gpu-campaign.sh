#!/usr/bin/env bash
# gpu-campaign.sh FGC N SEED OUTDIR [JOBS] - the random graphs on the GPU
# (testing.md layer 5, issue 5): graphs SEED .. SEED+N-1 of gen_graph.py
# (drawn again while `fgc run` gives non-finite outputs), each compiled
# fused and --no-fuse into a program that must match the reference
# interpreter's outputs (`fgc run --seed`) under --check's tolerances.
#
# One line per graph and variant, PASS, PLAN, ROUND or FAIL with the
# reason, then the counts.  A program that fails --check is compared with
# what its plan should compute: `fgc verify --precision kernel` runs the
# same plan on the CPU, each group in the kernels' f32 arithmetic and its
# stores rounded to their dtypes, and writes those values (OUTDIR/
# gSEED.VARIANT.plan/, with the reference's in-dtype baseline); the binary
# then runs --check against them.  The mismatch is excused only when the
# GPU equals that plan-rounded result within the gates (outlier bound
# included) and the plan's own result misses the f64 reference as well:
# PLAN when the plan's stores explain it (`fgc verify`, each group in f64,
# fails too), ROUND when its f32 arithmetic does (verify in f64 passes).
# Anything else is FAIL: a GPU that differs from the plan's result, or one
# that misses the reference where the plan's result meets it.  A graph
# with a FAIL, PLAN or ROUND stays in OUTDIR with its logs and the GPU's
# outputs (gSEED.fg, gSEED.VARIANT.*); the rest is removed.  Needs nvcc
# and a GPU; JOBS (default: the processor count) at a time.
#
# Building: nvcc's cost is mostly fixed per file (one random program alone
# took 2.9 s to compile here, ten in one file 4.1 s), so the programs are
# compiled BATCH at a time (default 50) as one translation unit, each in a
# namespace, into one binary whose fg_program and fg_program_run forward
# to the program the environment's FG_MODEL names.  A batch nvcc refuses
# is built program by program, so one bad .cu fails one program.
# NO_GPU=1 stops after the builds and runs each binary once without a
# GPU instead: every program must say "RGSEED: error: no CUDA device",
# naming its own graph (a check of the batching, for machines without one).
# SEEDS="S1 S2 ..." draws those graphs instead of N from SEED (to run a
# campaign's failures again).  STAGE=prepare stops after step 1 and keeps
# OUTDIR; STAGE=run then does the rest from that OUTDIR (prepare where CPU
# time is cheap, copy OUTDIR, build and run where the GPU is).  The H200
# campaign of docs/testing.md: 1,000 graphs prepared here in 490 s on 2
# cores (74 MB, 8.5 MB as .tar.gz); there, 40 batches built in 145 s on 16
# cores, then about 0.2 s of wall time per program run (16 at a time on
# one GPU: 1,852 in 375 s).
set -u
fgc=$(realpath "$1") n=$2 seed0=$3 out=$4 jobs=${5:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
nvcc=${NVCC:-nvcc}
batch=${BATCH:-50}
flags=(-O3 -gencode=arch=compute_90a,code=sm_90a -I"$src/runtime")
mkdir -p "$out/rt" || exit 1
out=$(cd "$out" && pwd)         # the batches #include by absolute path
log=$out/campaign.log   # prepare.log's lines, then the builds' and runs'
stage=${STAGE:-all}
rm -f "$out"/batch* "$out"/*.run                # a reused OUTDIR's
if [ "$stage" != run ]; then
	: >"$out/prepare.log"
	rm -f "$out"/*.ready
fi

# The runtime, compiled once (not for STAGE=prepare, which needs no nvcc).
for f in fgrt_lib.cu fgrt_main.cu npy.c half.c check.c; do
	[ "$stage" = prepare ] && break
	if ! "$nvcc" "${flags[@]}" -D_POSIX_C_SOURCE=200809L -c "$src/runtime/$f" -o "$out/rt/${f%.*}.o"; then
		echo "cannot compile runtime/$f"
		exit 1
	fi
done

# 1. Per graph: the graph, the reference outputs, the two programs' .cu.
prepare() {
	local seed=$1 g=$out/g$1 v opt
	if ! python3 "$here/gen_graph.py" "$seed" -o "$g.fg" --fgc "$fgc" >"$g.gen.log" 2>&1; then
		echo "SKIP $seed: gen_graph.py: $(tail -1 "$g.gen.log")"
		rm -f "$g".*
		return
	fi
	if ! "$fgc" run "$g.fg" --seed "$seed" --outputs "$g.ref" --in-dtype >"$g.ref.log" 2>&1; then
		echo "FAIL $seed reference: $(tail -1 "$g.ref.log")"
		return
	fi
	for v in fused nofuse; do
		opt=()
		[ $v = nofuse ] && opt=(--no-fuse)
		if "$fgc" compile "$g.fg" "${opt[@]}" -o "$g.$v" >"$g.$v.log" 2>&1; then
			echo "g$seed.$v" >"$g.$v.ready"
		else
			echo "FAIL $seed $v: fgc compile: $(head -1 "$g.$v.log")"
		fi
	done
}

# 2. A batch (the programs listed in batchB.list) into one binary; each
# program's way to run goes to gSEED.VARIANT.run: "BINARY NAME" (NAME for
# FG_MODEL, "-" for a binary of its own).
build() {
	local b=$1 list=$out/batch$1.list unit=$out/batch$1.cu i=0 m
	{
		printf '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
		printf '#include "fg_device.cuh"\n#include "fg_gemm_sm90.cuh"\n'
		while read -r m; do
			i=$((i + 1))
			printf 'namespace m%d {\n#include "%s.cu"\n}\n' $i "$out/$m"
		done <"$list"
		printf 'static const struct {\n\tconst char *name;\n\tconst FgrtProgram *prog;\n'
		printf '\tvoid (*run)(FgrtContext *);\n} fg_models[] = {\n'
		i=0
		while read -r m; do
			i=$((i + 1))
			printf '\t{"%s", &m%d::fg_program, m%d::fg_program_run},\n' "$m" $i $i
		done <"$list"
		cat <<'EOF'
};

/* The program FG_MODEL names (gpu-campaign.sh); exit 2 if none. */
static int fg_model(void)
{
	static int picked = -1;
	const char *want = getenv("FG_MODEL");
	for (int i = 0; picked < 0 && want && i < (int)(sizeof fg_models / sizeof fg_models[0]); i++)
		if (strcmp(want, fg_models[i].name) == 0)
			picked = i;
	if (picked < 0) {
		fprintf(stderr, "FG_MODEL=%s: no such program in this binary\n", want ? want : "(unset)");
		exit(2);
	}
	return picked;
}

extern const FgrtProgram fg_program = *fg_models[fg_model()].prog;

void fg_program_run(FgrtContext *ctx)
{
	fg_models[fg_model()].run(ctx);
}
EOF
	} >"$unit"
	if "$nvcc" "${flags[@]}" "$unit" "$out"/rt/*.o -lcublasLt -o "$out/batch$b.bin" >"$out/batch$b.log" 2>&1; then
		while read -r m; do echo "$out/batch$b.bin $m" >"$out/$m.run"; done <"$list"
		return
	fi
	while read -r m; do
		if "$nvcc" "${flags[@]}" "$out/$m.cu" "$out"/rt/*.o -lcublasLt -o "$out/$m.bin" >>"$out/$m.log" 2>&1; then
			echo "$out/$m.bin -" >"$out/$m.run"
		else
			echo "FAIL ${m#g}: nvcc: $(grep -m1 error "$out/$m.log")" | sed 's/\./ /'
		fi
	done <"$list"
}

# 3. One program against its reference.  A mismatch keeps the GPU's
# outputs (gSEED.VARIANT.out/), to be looked at without the GPU.
check() {
	local m=$1 seed v g bin name opt=() why
	seed=${m#g} && seed=${seed%.*} && v=${m##*.} && g=$out/g$seed
	read -r bin name <"$out/$m.run"
	[ "$name" = - ] && name=
	[ $v = nofuse ] && opt=(--no-fuse)
	if [ "${NO_GPU:-0}" = 1 ]; then
		FG_MODEL=$name "$bin" --seed "$seed" >"$g.$v.check" 2>&1
		# gen_graph.py names a graph drawn again rg(SEED * 1000 + attempt)
		if grep -Eq "^rg$seed([0-9]{3})?: error: no CUDA device" "$g.$v.check"; then
			echo "PASS $seed $v (no GPU: the binary ran rg$seed)"
		else
			echo "FAIL $seed $v: not rg$seed's no-device line: $(head -1 "$g.$v.check")"
		fi
		return
	fi
	if FG_MODEL=$name timeout 120 "$bin" --seed "$seed" --check "$g.ref" >"$g.$v.check" 2>&1; then
		echo "PASS $seed $v"
		return
	fi
	if ! grep -q '^FAIL .*max abs err' "$g.$v.check"; then
		# a crash or a timeout is the binary's, whatever the plan
		echo "FAIL $seed $v: --check: $(grep -m1 -v '^ok ' "$g.$v.check")"
		return
	fi
	why=$(grep -m1 FAIL "$g.$v.check")
	FG_MODEL=$name timeout 120 "$bin" --seed "$seed" --outputs "$g.$v.out" >/dev/null 2>&1
	local plan=$g.$v.plan vk=0
	rm -rf "$plan"
	"$fgc" verify "${opt[@]}" --precision kernel "$g.fg" --seed "$seed" --outputs "$plan" >"$g.$v.vk" 2>&1 || vk=1
	if [ ! -d "$plan" ]; then
		echo "FAIL $seed $v: fgc verify --precision kernel: $(tail -1 "$g.$v.vk"); --check: $why"
		return
	fi
	[ -d "$g.ref/in-dtype" ] && cp -r "$g.ref/in-dtype" "$plan/in-dtype"
	if ! FG_MODEL=$name timeout 120 "$bin" --seed "$seed" --check "$plan" >"$g.$v.vsplan" 2>&1; then
		echo "FAIL $seed $v: the GPU is not what the plan computes: $(grep -m1 -v '^ok ' "$g.$v.vsplan"); --check: $why"
	elif [ $vk = 0 ]; then
		echo "FAIL $seed $v: the GPU equals the plan's result, which meets the reference where the GPU does not; --check: $why"
	elif ! "$fgc" verify "${opt[@]}" "$g.fg" --seed "$seed" >"$g.$v.verify" 2>&1; then
		echo "PLAN $seed $v: the GPU equals the plan's result, whose stores miss the reference in f64 too; --check: $why"
	else
		echo "ROUND $seed $v: the GPU equals the plan's result, whose f32 arithmetic misses the reference as the GPU does (its stores in f64 do not); --check: $why"
	fi
}
export -f prepare build check
export fgc out here nvcc
export flags_s="${flags[*]}"

t0=$SECONDS
if [ "$stage" != run ]; then
	[ -n "${SEEDS:-}" ] && n=$(printf '%s\n' $SEEDS | wc -l)
	if [ -n "${SEEDS:-}" ]; then printf '%s\n' $SEEDS; else seq "$seed0" $((seed0 + n - 1)); fi |
		xargs -P "$jobs" -I{} bash -c 'prepare {}' >>"$out/prepare.log"
	echo "prepared $n graphs in $((SECONDS - t0)) s" >&2
	[ "$stage" = prepare ] && exit 0
fi
cp "$out/prepare.log" "$log"    # a second STAGE=run counts afresh
(cd "$out" && ls -- *.ready 2>/dev/null | sed 's/\.ready$//' | sort -V) | split -l "$batch" -d -a 4 - "$out/batch"
for f in "$out"/batch[0-9][0-9][0-9][0-9]; do [ -e "$f" ] && mv "$f" "$f.list"; done
ls "$out"/batch*.list 2>/dev/null | sed 's/.*batch\([0-9]*\)\.list/\1/' |
	xargs -P "$jobs" -I{} bash -c 'flags=($flags_s); build {}' >>"$log"
echo "built in $((SECONDS - t0)) s" >&2
(cd "$out" && ls -- *.run 2>/dev/null | sed 's/\.run$//') | xargs -P "$jobs" -I{} bash -c 'check {}' >>"$log"
echo "ran in $((SECONDS - t0)) s" >&2

sort -k2,2n -k3,3 "$log"
pass=$(grep -c '^PASS' "$log") fail=$(grep -c '^FAIL' "$log")
skip=$(grep -c '^SKIP' "$log") plan=$(grep -c '^PLAN' "$log") round=$(grep -c '^ROUND' "$log")
echo "$pass passed, $plan as the plan's stores, $round as the plan's f32 arithmetic (each: the GPU equals the" \
	"plan's result, which misses the reference too), $fail failed, $skip skipped"
# keep what a failure needs; the binaries and units are rebuilt from it
bad=$(grep -E '^(FAIL|PLAN|ROUND)' "$log" | awk '{print $2}' | sort -u)
for g in "$out"/g*.fg; do
	[ -e "$g" ] || continue
	s=${g##*/g} && s=${s%.fg}
	[[ $s == *.* ]] && continue     # a gSEED.*.fg goes with gSEED
	echo "$bad" | grep -qx "$s" || rm -rf "$out/g$s".*
done
rm -f "$out"/batch* "$out"/g*.bin
[ "$fail" -eq 0 ]
