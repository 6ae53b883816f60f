#!/usr/bin/env bash
# Bad command lines and bad files given to fgc: each must fail with exit
# status 1 and one clear `error:` message, and leave no output behind.
# Usage: bash tests/run-cli.sh FGC SOURCE_DIR BUILD_DIR
set -u
fgc=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
good=$tmp/good.fg
printf 'graph g {\n  input x : f32[B=4, 3]\n  y = exp(x)\n  output y\n}\n' >"$good"
printf 'not npy' >"$tmp/short.npy"
mkdir -p "$tmp/bad_in" && cp "$tmp/short.npy" "$tmp/bad_in/x.npy"
mkdir -p "$tmp/fifo_in" "$tmp/link_in" && mkfifo "$tmp/fifo_in/x.npy" && ln -s "$tmp/nowhere" "$tmp/link_in/x.npy"
touch "$tmp/afile"

# expect STATUS TEXT -- ARGS: exit status STATUS and TEXT on stderr.
expect() {
  local status=$1 text=$2
  shift 3
  "$fgc" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq "$status" ] && grep -qF -- "$text" "$tmp/err"; then
    pass=$((pass + 1)); echo "PASS fgc $*"
  else
    fail=$((fail + 1)); echo "FAIL fgc $* (exit $got, wanted $status and '$text'):"; head -5 "$tmp/err"
  fi
}

expect 1 "usage: fgc" --
expect 1 "unknown command 'frob'" -- frob "$good"
expect 1 "needs a .fg file" -- check
expect 1 "cannot read '$tmp/missing.fg'" -- check "$tmp/missing.fg"
expect 1 "is a directory" -- check "$tmp"
expect 1 "unknown option '--bogus'" -- check --bogus "$good"
expect 1 "takes one .fg file" -- check "$good" "$good"
expect 1 "must be a positive integer" -- check "$good" -D B=abc
expect 1 "must be a positive integer" -- check "$good" -D B=0
expect 1 "must be a positive integer" -- check "$good" -D B=99999999999999999999
expect 1 "must be a positive integer" -- check "$good" -D B=-4
expect 1 "-D takes NAME=VALUE" -- check "$good" -D =5
expect 1 "-D takes NAME=VALUE" -- check "$good" -D B
expect 1 "not an identifier" -- check "$good" -D 9B=4
expect 1 "given twice" -- check "$good" -D B=4 -D B=5
expect 1 "-D needs a value" -- check "$good" -D
expect 1 "no such stage" -- check -d nosuch "$good"
expect 1 "names no dimension" -- check "$good" -D Q=4
expect 1 "-D b=4 names no dimension of graph 'g'; did you mean 'B'?" -- check "$good" -D b=4
expect 1 "-o needs a value, got ''" -- compile "$good" -o ''
expect 1 "no folder '$tmp/missing'" -- compile "$good" -o "$tmp/missing/m"
expect 1 "needs --outputs" -- run "$good"
expect 1 "--outputs belongs to 'run' and 'verify', not 'check'" -- check "$good" --outputs "$tmp/o"
expect 1 "--reg-limit belongs to 'report', 'extract', 'verify' and 'compile', not 'run'" -- run "$good" --reg-limit 40 --outputs "$tmp/o"
expect 1 "--reg-limit 0: expected a whole number from 1 to 255" -- report "$good" --reg-limit 0
expect 1 "--seed belongs to 'run' and 'verify', not 'report'" -- report "$good" --seed 3
expect 1 "--plant rows: expected element, row, column or tile" -- verify "$good" --plant rows
expect 1 "--plant belongs to 'verify', not 'run'" -- run "$good" --plant row --outputs "$tmp/o"
expect 1 "--precision f32: expected f64 or kernel" -- verify "$good" --precision f32
expect 1 "--dot-ops 0,x: expected all, none or group numbers such as 0,3" -- report "$good" --format dot --dot-ops 0,x
expect 1 "--dot-ops -1: expected all, none or group numbers" -- report "$good" --format dot --dot-ops -1
expect 1 "--dot-ops 0,99: the plan has" -- report "$good" --format dot --dot-ops 0,99
expect 1 "--dot-ops all: only with --format dot" -- report "$good" --dot-ops all
expect 1 "--explain yy: graph 'g' has no value of that name; did you mean 'y'?" -- report "$good" --explain yy
expect 1 "--explain qqqqq: graph 'g' has no value of that name" -- report "$good" --explain qqqqq
expect 1 "--diff \"--format json\": '--format' does not change the plan" -- report "$good" --diff "--format json"
expect 1 "--diff \"--reg-limit\": '--reg-limit' needs a value" -- report "$good" --diff "--reg-limit"
expect 1 "--diff \"--no-fuse x\": 'x' is not a flag" -- report "$good" --diff "--no-fuse x"
expect 1 "--diff --no-fuse: the comparison is text; leave out --format dot" -- report "$good" --diff --no-fuse --format dot
expect 1 "cannot read '$tmp/missing.fg'" -- report "$good" --diff "$tmp/missing.fg"
expect 1 "--explain y: the explanation is text; leave out --format json" -- report "$good" --explain y --format json
expect 1 "--explain belongs to 'report', not 'check'" -- check "$good" --explain y
# verify --plant fails every value, --outputs writes the plan's values
if "$fgc" verify "$good" --outputs "$tmp/vo" >"$tmp/v1" && [ -n "$(ls "$tmp/vo"/*.npy 2>/dev/null)" ] &&
   ! "$fgc" verify "$good" --plant element >"$tmp/v2" 2>&1 && ! grep -q '^ok ' "$tmp/v2" &&
   [ "$(grep -c '^ok ' "$tmp/v1")" = "$(grep -c '^FAIL ' "$tmp/v2")" ] &&
   "$fgc" verify "$good" --precision kernel >/dev/null; then
  pass=$((pass + 1)); echo "PASS verify --outputs writes the plan's values, --plant fails each, --precision kernel"
else
  fail=$((fail + 1)); echo "FAIL verify --outputs / --plant / --precision kernel"
fi
expect 1 "unknown option '--frob'" -- report "$good" --frob 3
expect 1 "'compile' needs -o OUT" -- compile "$good"
expect 1 "'extract' needs --group N" -- extract "$good"
expect 1 "--format needs a value" -- report "$good" --format
expect 1 "unsigned 64-bit" -- run "$good" --outputs "$tmp/o" --seed -1
expect 1 "$tmp/afile" -- run "$good" --outputs "$tmp/afile"
expect 1 "x.npy" -- run "$good" --inputs "$tmp/bad_in" --outputs "$tmp/o1"
expect 1 "error" -- run "$good" --inputs "$tmp/no_such_dir" --outputs "$tmp/o2"
expect 1 "not a regular file" -- run "$good" --inputs "$tmp/fifo_in" --outputs "$tmp/o3"
expect 1 "x.npy: cannot open" -- run "$good" --inputs "$tmp/link_in" --outputs "$tmp/o4"
# compile's --gemm: a known choice, sm_90a for the generated matmul
mm=$tmp/mm.fg
printf 'graph m {\n  input a : bf16[16, 32]\n  param w : bf16[32, 24]\n  y = gelu(matmul(a, w))\n  output y\n}\n' >"$mm"
expect 1 "--gemm tiles: expected auto, cublaslt or fgc" -- compile "$mm" -o "$tmp/g1" --gemm tiles
expect 1 "--gemm fgc needs --arch sm_90a" -- compile "$mm" -o "$tmp/g2" --gemm fgc --arch sm_80
expect 1 "--gemm belongs to 'report' and 'compile', not 'run'" -- run "$mm" --gemm fgc --outputs "$tmp/o6"
expect 1 "--gemm tiles: expected auto, cublaslt or fgc" -- report "$mm" --gemm tiles
expect 1 "'--gemm' needs a value" -- report "$mm" --diff "--gemm"
expect 1 "--tf32 belongs to 'report' and 'compile', not 'run'" -- run "$mm" --tf32 --outputs "$tmp/o5"
for d in g1.cu g2.cu; do
  if [ -e "$tmp/$d" ]; then fail=$((fail + 1)); echo "FAIL a failed compile left $d behind"; fi
done
if "$fgc" compile "$mm" -o "$tmp/g3" --arch sm_80 && ! grep -q "fgg::launch" "$tmp/g3.cu" &&
   "$fgc" compile "$mm" -o "$tmp/g4" && grep -q "fgg::launch" "$tmp/g4.cu"; then
  pass=$((pass + 1)); echo "PASS --arch sm_80 keeps cuBLASLt, sm_90a takes the generated matmul"
else
  fail=$((fail + 1)); echo "FAIL --arch sm_80 / the default: who runs the matmul"
fi
# the attention kernel is sm_90a code: another --arch keeps the pattern a
# scores gemm, a softmax and a gemm
at="$src/samples/attn_bf16.fg"
if "$fgc" compile "$at" -o "$tmp/a1" --arch sm_80 && ! grep -q "fga::launch" "$tmp/a1.cu" &&
   grep -q "g1_rowreduce_softmax" "$tmp/a1.cu" && "$fgc" compile "$at" -o "$tmp/a2" && grep -q "fga::launch" "$tmp/a2.cu"; then
  pass=$((pass + 1)); echo "PASS --arch sm_80 keeps attention three kernels, sm_90a makes it one"
else
  fail=$((fail + 1)); echo "FAIL --arch sm_80 / the default: the attention group"
fi
# programmatic dependent launch is sm_90's: another --arch launches plainly
sm="$src/samples/softmax_f16.fg"
if "$fgc" compile "$sm" -o "$tmp/s1" --arch sm_80 && grep -q "<<<" "$tmp/s1.cu" &&
   ! grep -q "fg_launch(\|fg_grid_wait" "$tmp/s1.cu" && ! grep -q "fg_launch(\|fg_grid_wait" "$tmp/a1.cu" &&
   "$fgc" compile "$sm" -o "$tmp/s2" && grep -q "fg_launch(" "$tmp/s2.cu" && ! grep -q "<<<" "$tmp/s2.cu"; then
  pass=$((pass + 1)); echo "PASS --arch sm_80 launches plainly, sm_90a by fg_launch"
else
  fail=$((fail + 1)); echo "FAIL --arch sm_80 / the default: plain or programmatic launches"
fi
# a division by a literal among an attention group's score ops (s + b) / c
# is a product by 1 / c; an elementwise kernel's stays a division (its
# readers may round or compare the quotient); a softcap's constant factors
# leave the functor (ScoreFold): the scale and the / 30 before its tanh
# are one product, the 30 after it is the kernel's scale at the launch
sc=$tmp/softcap.fg sd=$tmp/divide.fg
printf 'graph sc {\n  input q : bf16[2, 64, 64]\n  input k : bf16[2, 64, 64]\n  input v : bf16[2, 64, 64]\n  s = matmul(q, transpose(k)) * 0.125\n  o = matmul(softmax(30.0 * tanh(s / 30.0)), v)\n  output o\n}\n' >"$sc"
printf 'graph sd {\n  input q : bf16[2, 64, 64]\n  input k : bf16[2, 64, 64]\n  input v : bf16[2, 64, 64]\n  input b : bf16[64, 64]\n  input x : f16[64]\n  o = matmul(softmax(tanh((matmul(q, transpose(k)) + b) / 30.0)), v)\n  y = x / 30.0\n  output o, y\n}\n' >"$sd"
if "$fgc" compile "$sd" -o "$tmp/sd1" && grep -q "fga::launch" "$tmp/sd1.cu" &&
   sed -n '/_scores {/,/^};/p' "$tmp/sd1.cu" | grep -q "= 1.0f / 30.0f;" &&
   sed -n '/_scores {/,/^};/p' "$tmp/sd1.cu" | grep -q "= v__[0-9]* \* rcp_d;" &&
   ! sed -n '/_scores {/,/^};/p' "$tmp/sd1.cu" | grep -q "/ 30.0f)" && grep -q "(v_x / 30.0f)" "$tmp/sd1.cu"; then
  pass=$((pass + 1)); echo "PASS an attention score op's division by a literal is a product, an elementwise one a division"
else
  fail=$((fail + 1)); echo "FAIL the score op (s + b) / 30 in the attention functor, or x / 30 elsewhere"
fi
if "$fgc" compile "$sc" -o "$tmp/sc1" && sed -n '/_scores {/,/^};/p' "$tmp/sc1.cu" | grep -q "fg_fast_tanh((v0 \* 0.00416666667f))" &&
   [ "$(sed -n '/_scores {/,/^};/p' "$tmp/sc1.cu" | grep -c ' \* \|rcp\| / ')" = 2 ] &&
   grep -q "fga::launch<.*, 64, 64, 30.0f, " "$tmp/sc1.cu"; then
  pass=$((pass + 1)); echo "PASS a softcap's factors: one product in the functor, its last factor the kernel's scale"
else
  fail=$((fail + 1)); echo "FAIL a softcap's factors: the functor's products, or the scale at the launch"
fi
# A split attention launch (flash-decoding) is one kernel: its last block
# merges the runs on ctx->counters, a counter per warp of consumer rows
# (the program's count: 8 matrices x 1 query tile x 2 consumers x 4
# warps), and a plain launch takes none
if "$fgc" compile "$src/tests/fuse/attention-few-blocks.fg" -o "$tmp/fb" &&
   grep -q "fga::Part{(float \*)ctx->scratch, (float2 \*)(ctx->scratch + [0-9]*), 16, 15, ctx->counters}" "$tmp/fb.cu" &&
   grep -q "^	[0-9]*, [0-9]*, 64,	/\* arena and scratch bytes, counters \*/" "$tmp/fb.cu" &&
   [ "$(grep -c 'fga::launch' "$tmp/fb.cu")" = 1 ] && ! grep -q "combine" "$tmp/fb.cu" &&
   "$fgc" compile "$sc" -o "$tmp/sc2" && grep -q "^	[0-9]*, [0-9]*, 0,	/\* arena and scratch bytes, counters \*/" "$tmp/sc2.cu"; then
  pass=$((pass + 1)); echo "PASS a split attention launch: one kernel, its merge counted on ctx->counters (64 of them)"
else
  fail=$((fail + 1)); echo "FAIL a split attention launch's kernels, its Part or the program's counters"
fi
# a causal launch's last matrices run their query tiles together by cost
# (lpt): two turns of 132 multiprocessors, ceil(264 / 32) = 9 of the 64
# matrices of 4,096 rows (32 tiles each), 32 of 32 at 1,024 rows (8
# tiles: 256 units, too few to pair off), none where a matrix's keys and
# values (32,768 keys: 16 MiB) leave room in 24 MiB for no other (one
# matrix by cost is its order as it is); the same graph without its mask
# takes none.  64 matrices at 1,024 rows (512 units, 8 key tiles each)
# run persistent, their units in pairs (fga::Order's pairs)
ca=$tmp/causal.fg cp=$tmp/plainattn.fg
printf 'graph c {\n  input q : bf16[64, 4096, 128]\n  input k : bf16[64, 4096, 128]\n  input v : bf16[64, 4096, 128]\n  m = iota(shape=[4096, 4096], axis=1) <= iota(shape=[4096, 4096], axis=0)\n  o = matmul(softmax(where(m, matmul(q, transpose(k)) * 0.088, -inf)), v)\n  output o\n}\n' >"$ca"
sed 's/where(m, \(matmul(q, transpose(k)) \* 0.088\), -inf)/\1/' "$ca" >"$cp"
if "$fgc" compile "$ca" -o "$tmp/ca1" && grep -q "fga::Part{}, fga::Order{9, false});" "$tmp/ca1.cu" &&
   grep -q "the last 9 matrices' query tiles together, the costliest first" "$tmp/ca1.cu" &&
   sed 's/4096/1024/g; s/\[64, /[32, /g' "$ca" >"$tmp/ca2.fg" && "$fgc" compile "$tmp/ca2.fg" -o "$tmp/ca2" &&
   grep -q "fga::launch<__nv_bfloat16, 128, 2, 128, false, false, 0>(.*fga::Part{}, fga::Order{32, false});" "$tmp/ca2.cu" &&
   sed 's/4096/1024/g' "$ca" >"$tmp/ca4.fg" && "$fgc" compile "$tmp/ca4.fg" -o "$tmp/ca4" &&
   grep -q "fga::launch<__nv_bfloat16, 128, 2, 128, false, true, 0>(.*fga::Part{}, fga::Order{0, true});" "$tmp/ca4.cu" &&
   grep -q "each taking every gridDim.x-th pair (a matrix's tiles t and last - t" "$tmp/ca4.cu" &&
   sed 's/4096/1024/g; s/k : bf16\[64, 1024/k : bf16[64, 32768/; s/v : bf16\[64, 1024/v : bf16[64, 32768/; s/shape=\[1024, 1024\]/shape=[1024, 32768]/g' "$ca" >"$tmp/ca3.fg" &&
   "$fgc" compile "$tmp/ca3.fg" -o "$tmp/ca3" && grep -q "fga::Part{}, fga::Order{0, false});" "$tmp/ca3.cu" &&
   "$fgc" compile "$cp" -o "$tmp/cp1" && grep -q "fga::Part{}, fga::Order{0, false});" "$tmp/cp1.cu" && ! grep -q "costliest" "$tmp/cp1.cu"; then
  pass=$((pass + 1)); echo "PASS a causal launch's last 9 of 64 matrices run by cost (32 of 32 at 1,024 rows, none with 32,768 keys, 64 at 1,024 persistent in pairs), a plain one's none"
else
  fail=$((fail + 1)); echo "FAIL the matrices whose query tiles run by cost (fga::Order)"
fi
# the attention output's pair of columns, carried through the heads'
# merge (transformer_block: a transpose that keeps the head dim last, a
# reshape), is one vector store; reshaped to rows of 3 before a transpose,
# the pair at an even flat index straddles two rows: two stores
ed=$tmp/oddrows.fg
printf 'graph e {\n  input q : bf16[2, 3, 64]\n  input k : bf16[2, 5, 64]\n  input v : bf16[2, 5, 64]\n  o = matmul(softmax(matmul(q, transpose(k)) * 0.125), v)\n  y = reshape(transpose(reshape(o, shape=[2, 64, 3]), perm=[1, 0, 2]), shape=[64, 6])\n  output y\n}\n' >"$ed"
if "$fgc" compile "$src/samples/transformer_block.fg" -o "$tmp/tb" && grep -q "fg_stv(t_c + (r \* 1024 + z \* 64 + c), FgVec<__nv_bfloat16, 2>" "$tmp/tb.cu" &&
   "$fgc" compile "$ed" -o "$tmp/ed" && ! grep -q "fg_stv(t_y" "$tmp/ed.cu" && [ "$(grep -c "t_y\[.*\] = fg_to_bf16" "$tmp/ed.cu")" = 2 ]; then
  pass=$((pass + 1)); echo "PASS the output's pair: one store through the heads' merge, two across rows of 3"
else
  fail=$((fail + 1)); echo "FAIL the output's pair of columns: one vector store or two"
fi
# a loop whose arithmetic bounds it takes one element a thread (loop.c,
# past LANES_ISSUE instructions a byte): compute-bound-chain's chains of
# twenty f32 ops and twelve f16 ops stride by one element, its light chain
# keeps 4 lanes; a round of sin, cos, tanh and sigmoid on f32 (13 a byte)
# keeps its lanes, three rounds (38) take one
cb=$src/tests/gpu/compute-bound-chain.fg
rounds() {
  printf 'graph r {\n  input x : f32[4096]\n'
  p=x; for i in $(seq 1 "$1"); do
    printf '  s%d = sin(%s)\n  c%d = cos(s%d)\n  t%d = tanh(c%d)\n  g%d = sigmoid(t%d)\n' $i $p $i $i $i $i $i $i; p=g$i
  done
  printf '  output %s\n}\n' $p
}
rounds 1 >"$tmp/r1.fg" && rounds 3 >"$tmp/r3.fg"
if "$fgc" compile "$cb" -D N=4096 -o "$tmp/cb" &&
   grep -q "g0_loop_sigmoid: loop over f32\[4096\]; one element a thread: 64 instructions a byte" "$tmp/cb.cu" &&
   grep -q "g1_loop_sigmoid: loop over f16\[4096\]; one element a thread: 51 instructions a byte" "$tmp/cb.cu" &&
   grep -q "g2_loop_add: loop over f32\[4096\]; 4 lanes a thread" "$tmp/cb.cu" &&
   [ "$(grep -c "i < 4096; i += gridDim.x \* blockDim.x" "$tmp/cb.cu")" = 2 ] &&
   "$fgc" compile "$tmp/r1.fg" -o "$tmp/r1" && grep -q "; 4 lanes a thread" "$tmp/r1.cu" &&
   "$fgc" compile "$tmp/r3.fg" -o "$tmp/r3" && grep -q "; one element a thread: 38 instructions a byte" "$tmp/r3.cu"; then
  pass=$((pass + 1)); echo "PASS a compute-bound loop: one element a thread; a light one keeps its lanes"
else
  fail=$((fail + 1)); echo "FAIL a compute-bound loop: one element a thread, a light one its lanes"
fi
# --tf32: f32 operands go to cuBLASLt's tf32 path, and what they feed is
# checked at tf32's precision (y: gate 7, RMSE at tf32 and fed by tanh; 5 without --tf32); 16-bit ones and the default keep f32;
# the generated kernel takes the K-major product (u) under --gemm fgc only
mf=$tmp/mf.fg
printf 'graph f {\n  input a : f32[16, 32]\n  param w : f32[32, 24]\n  param wt : f32[24, 32]\n  input h : bf16[16, 32]\n  param v : bf16[32, 24]\n  y = tanh(matmul(a, w))\n  z = matmul(h, v)\n  u = gelu(matmul(a, transpose(wt)))\n  output y, z, u\n}\n' >"$mf"
if "$fgc" compile "$mf" -o "$tmp/t1" --tf32 && grep -q "FGRT_TF32, FGRT_F32" "$tmp/t1.cu" &&
   grep -q '{"y", FGRT_F32, 2, {16, 24}, FGRT_OUTPUT, [0-9]*, 7}' "$tmp/t1.cu" &&
   grep -q '{"z", FGRT_BF16, 2, {16, 24}, FGRT_OUTPUT, [0-9]*, 1}' "$tmp/t1.cu" &&
   "$fgc" compile "$mf" -o "$tmp/t2" && ! grep -q "TF32" "$tmp/t2.cu" &&
   grep -q '{"y", FGRT_F32, 2, {16, 24}, FGRT_OUTPUT, [0-9]*, 5}' "$tmp/t2.cu" &&
   ! grep -q "fgg::launch<float" "$tmp/t1.cu" &&
   "$fgc" compile "$mf" -o "$tmp/t3" --tf32 --gemm fgc && [ "$(grep -c "fgg::launch<float" "$tmp/t3.cu")" = 1 ]; then
  pass=$((pass + 1)); echo "PASS --tf32: f32 matmuls on tf32, their values at its gate; not without it; the generated kernel's tf32 with --gemm fgc alone"
else
  fail=$((fail + 1)); echo "FAIL --tf32: operand types or gates in the emitted tables"
fi
# report --tf32 says what compile --tf32 does with u's K-major f32 product
if "$fgc" report "$mf" --tf32 | grep -q "not the generated matmul: tf32, kept on cuBLASLt by --gemm auto" &&
   "$fgc" report "$mf" --tf32 --format json | grep -q "tf32, kept on cuBLASLt by --gemm auto" &&
   "$fgc" report "$mf" | grep -q "not the generated matmul: operands other than f16 or bf16 (f32 with --tf32)"; then
  pass=$((pass + 1)); echo "PASS report --tf32: its GPU notes follow the flag"
else
  fail=$((fail + 1)); echo "FAIL report --tf32: the GPU notes of the f32 matmuls"
fi
# report --gemm says what compile --gemm does: auto gives its estimates
# (gemm_bias_gelu's epilogue on the generated kernel); of transformer_block's
# matmuls, cublaslt puts the FFN up projection and the three head-split
# projections on cuBLASLt's scratch and an epilogue kernel, fgc the up
# projection and the two bias-and-residual ones (cuBLASLt's own epilogue
# otherwise) on the generated kernel; --diff says what the flag changes,
# and a plan's label names it (run-report.sh checks the launches against
# compile's)
tb=$src/samples/transformer_block.fg gbg=$src/samples/gemm_bias_gelu_bf16.fg
if "$fgc" report "$gbg" | grep -q "the epilogue on its registers (est " &&
   ! "$fgc" report "$tb" | grep -q "(--gemm" &&
   [ "$("$fgc" report "$tb" --gemm cublaslt | grep -c "then an epilogue kernel (--gemm cublaslt)")" = 4 ] &&
   [ "$("$fgc" report "$tb" --gemm fgc | grep -c "the epilogue on its registers (--gemm fgc)")" = 3 ] &&
   "$fgc" report "$tb" --gemm fgc --format json | grep -q "(--gemm fgc)" &&
   "$fgc" report "$gbg" --diff "--gemm cublaslt" | grep -q "= B 0: the same ops; in B 2 launches" &&
   "$fgc" report "$tb" --gemm fgc --diff "--no-fuse" | grep -q "A: .*transformer_block.fg --gemm fgc$"; then
  pass=$((pass + 1)); echo "PASS report --gemm: its GPU notes, --diff and the plan's label follow the flag"
else
  fail=$((fail + 1)); echo "FAIL report --gemm: the GPU notes, --diff or the label of the matmul samples"
fi

# --reg-limit is the emitter's limit too (passes/kinds.c): softmax_f16's
# rows of 4096 sit in registers, 16 elements a thread, at the default; not
# within 40 registers a thread, where the row goes to shared memory
if "$fgc" compile "$src/samples/softmax_f16.fg" -o "$tmp/r1" && grep -q "the row in registers (2 x 8" "$tmp/r1.cu" &&
   "$fgc" compile "$src/samples/softmax_f16.fg" --reg-limit 64 -o "$tmp/r2" && grep -q "the row in registers (1 x 8" "$tmp/r2.cu" &&
   "$fgc" compile "$src/samples/softmax_f16.fg" --reg-limit 40 -o "$tmp/r3" && grep -q "the row read once into shared memory" "$tmp/r3.cu"; then
  pass=$((pass + 1)); echo "PASS compile --reg-limit: the kernel's elements a thread follow the limit"
else
  fail=$((fail + 1)); echo "FAIL compile --reg-limit: the row kernels' shapes"
fi

# A row held whole in shared memory (a block of 512, one row): ptxas is
# told 4 blocks a multiprocessor where fgc estimates 32 registers or fewer
# (rmsnorm), not where it estimates more (layernorm: rowreduce.c)
printf 'graph t {\n  input x : f16[R=4096, C=32768]\n  param g : f16[C]\n  y = rmsnorm(x, g)\n  output y\n}\n' >"$tmp/lb1.fg"
printf 'graph t {\n  input x : f16[R=4096, C=32768]\n  param g : f16[C]\n  param b : f16[C]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/lb2.fg"
if "$fgc" compile "$tmp/lb1.fg" -o "$tmp/lb1" && grep -q "__launch_bounds__(512, 4)" "$tmp/lb1.cu" &&
   grep -q "rowreduce.smem" "$tmp/lb1.cu" &&
   "$fgc" compile "$tmp/lb2.fg" -o "$tmp/lb2" && grep -q "__launch_bounds__(512)$" "$tmp/lb2.cu" &&
   grep -q "rowreduce.smem" "$tmp/lb2.cu"; then
  pass=$((pass + 1)); echo "PASS compile: a row in shared memory tells ptxas 4 blocks where 32 registers are estimated"
else
  fail=$((fail + 1)); echo "FAIL compile: the launch bounds of a row held in shared memory"
fi

# A layernorm written by hand pairs its mean with its squared deviations
# whether it squares them as square(d) or as d * d; d * x is no square
# and takes a pass of its own (rowreduce.c, pair_of)
i=0
for sq in 'd * d' 'square(d)' 'd * x'; do
  i=$((i + 1))
  printf 'graph t {\n  input x : f16[4096, 131072]\n  d = x - mean(x, axis=-1, keepdims=true)\n  y = d * rsqrt(mean(%s, axis=-1, keepdims=true) + 1e-5)\n  output y\n}\n' "$sq" >"$tmp/sq$i.fg"
done
if "$fgc" compile "$tmp/sq1.fg" -o "$tmp/sq1" && [ "$(grep -c 'fg_cluster_reduce<8>(' "$tmp/sq1.cu")" = 1 ] &&
   grep -q 'fg_cluster_reduce<8>(acc_.*, FgWelford(), turn++);' "$tmp/sq1.cu" &&
   "$fgc" compile "$tmp/sq2.fg" -o "$tmp/sq2" && [ "$(grep -c 'fg_cluster_reduce<8>(acc_.*, FgWelford(), turn++);' "$tmp/sq2.cu")" = 1 ] &&
   "$fgc" compile "$tmp/sq3.fg" -o "$tmp/sq3" && [ "$(grep -c 'fg_cluster_reduce<8>(acc_.*, FgSum(), turn++);' "$tmp/sq3.cu")" = 2 ] &&
   ! grep -q 'FgWelford' "$tmp/sq3.cu"; then
  pass=$((pass + 1)); echo "PASS compile: a hand-written layernorm's d * d pairs as square(d) does, d * x does not"
else
  fail=$((fail + 1)); echo "FAIL compile: a hand-written layernorm's square as d * d, square(d) or d * x"
fi

# A cluster's parts each a few whole strides of its block are walked by a
# counted loop unrolled whole; an uneven split keeps the bounded loop; a
# cluster's every combine passes its turn, a softmax's pair's one and two
# reductions' two (rowreduce.c, fg_cluster_reduce)
printf 'graph t {\n  input x : bf16[4096, 131072]\n  y = softmax(x)\n  output y\n}\n' >"$tmp/cw1.fg"
printf 'graph t {\n  input x : bf16[3, 131080]\n  y = softmax(x)\n  output y\n}\n' >"$tmp/cw2.fg"
printf 'graph t {\n  input x : bf16[4096, 131072]\n  y = x / sum(x, axis=-1, keepdims=true) - max(x, axis=-1, keepdims=true)\n  output y\n}\n' >"$tmp/cw3.fg"
if "$fgc" compile "$tmp/cw1.fg" -o "$tmp/cw1" && grep -q "rowreduce.cluster" "$tmp/cw1.cu" &&
   [ "$(grep -c 'for (int u = 0; u < 8; u++)' "$tmp/cw1.cu")" = 3 ] && ! grep -q "j < c1" "$tmp/cw1.cu" &&
   [ "$(grep -c 'fg_cluster_reduce<8>(.*, turn++);' "$tmp/cw1.cu")" = 1 ] && grep -q "fg_cluster_start();" "$tmp/cw1.cu" &&
   "$fgc" compile "$tmp/cw3.fg" -o "$tmp/cw3" && [ "$(grep -c 'fg_cluster_reduce<8>(.*, turn++);' "$tmp/cw3.cu")" = 2 ] &&
   "$fgc" compile "$tmp/cw2.fg" -o "$tmp/cw2" && grep -q "rowreduce.cluster" "$tmp/cw2.cu" &&
   [ "$(grep -c 'j < c1; j += ' "$tmp/cw2.cu")" = 3 ] && ! grep -q "for (int u = 0" "$tmp/cw2.cu"; then
  pass=$((pass + 1)); echo "PASS compile: a cluster's whole parts take a counted loop, its combines their turns"
else
  fail=$((fail + 1)); echo "FAIL compile: a cluster's part loops or its combines' turns"
fi

# A staged f32 row's softmax pair is taken thread first: the max over the
# thread's part, then a second sweep of its exps against it, one
# fg_pair_add a row and one combine; two pairs that share a max (a softmax
# and a logsumexp) take it once; a streamed row keeps the running max
# (rowreduce.c, thread_first)
printf 'graph t {\n  input x : f32[8, 131072]\n  y = softmax(x)\n  output y\n}\n' >"$tmp/tf1.fg"
printf 'graph t {\n  input x : f32[4096, 20000]\n  y = log_softmax(x)\n  output y\n}\n' >"$tmp/tf2.fg"
printf 'graph t {\n  input x : f32[2, 600000]\n  y = softmax(x)\n  output y\n}\n' >"$tmp/tf3.fg"
printf 'graph t {\n  input w : f32[140, 20000]\n  m = max(w, axis=-1, keepdims=true)\n  s = sum(exp(w - m), axis=-1, keepdims=true)\n  l = logsumexp(w, axis=-1, keepdims=true)\n  y = exp(w - m) / s + (w - l)\n  output y\n}\n' >"$tmp/tf4.fg"
if "$fgc" compile "$tmp/tf1.fg" -o "$tmp/tf1" && grep -q "rowreduce.cluster" "$tmp/tf1.cu" &&
   [ "$(grep -c 'for (int u = 0; u < 8; u++)' "$tmp/tf1.cu")" = 3 ] &&
   [ "$(grep -c 'fg_pair_add(FgExpSum{-CUDART_INF_F, 0.0f}, 0.0f, acc_' "$tmp/tf1.cu")" = 1 ] &&
   [ "$(grep -c 'fg_pair_add' "$tmp/tf1.cu")" = 1 ] &&
   [ "$(grep -c 'fg_cluster_reduce<8>(pair_.*FgOnlineSoftmax(), turn++);' "$tmp/tf1.cu")" = 1 ] &&
   "$fgc" compile "$tmp/tf2.fg" -o "$tmp/tf2" && grep -q "rowreduce.smem" "$tmp/tf2.cu" &&
   [ "$(grep -c 'for (int j = threadIdx.x \* 4; j < 20000; j += 2048)' "$tmp/tf2.cu")" = 3 ] &&
   [ "$(grep -c 'fg_pair_add' "$tmp/tf2.cu")" = 1 ] &&
   grep -q 'fg_block_reduce(pair_.*, FgOnlineSoftmax());' "$tmp/tf2.cu" &&
   "$fgc" compile "$tmp/tf3.fg" -o "$tmp/tf3" && grep -q "rowreduce.stream.cluster" "$tmp/tf3.cu" &&
   grep -q 'acc_.* = fg_pair_add(acc_.*, 4.0f, m_' "$tmp/tf3.cu" &&
   "$fgc" compile "$tmp/tf4.fg" -o "$tmp/tf4" &&
   [ "$(grep -c 'fg_pair_add(FgExpSum{-CUDART_INF_F, 0.0f}, 0.0f, acc_m, ' "$tmp/tf4.cu")" = 2 ] &&
   [ "$(grep -c 'acc_m = fg_maximum' "$tmp/tf4.cu")" = 4 ] && ! grep -q 'acc_m_2' "$tmp/tf4.cu"; then
  pass=$((pass + 1)); echo "PASS compile: a staged f32 row's softmax pair thread first, a streamed one's running"
else
  fail=$((fail + 1)); echo "FAIL compile: a staged f32 row's softmax pair (thread first) or a streamed one's"
fi

# A staged 16-bit row takes its pair (one combine) where it is a
# cluster's, not in a block of its own; moments combine in steps where
# one wave holds every row, Welford's chain where more rows hide it
# (rowreduce.c, takes_pairs and FEW_ROWS)
printf 'graph t {\n  input x : f32[64, 131072]\n  input g : f32[131072]\n  input b : f32[131072]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/ws1.fg"
printf 'graph t {\n  input x : f32[4096, 32768]\n  input g : f32[32768]\n  input b : f32[32768]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/ws2.fg"
printf 'graph t {\n  input x : f16[64, 131072]\n  input g : f16[131072]\n  input b : f16[131072]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/ws3.fg"
printf 'graph t {\n  input x : f16[4096, 131072]\n  input g : f16[131072]\n  input b : f16[131072]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/ws4.fg"
printf 'graph t {\n  input x : bf16[8, 131072]\n  y = softmax(x)\n  output y\n}\n' >"$tmp/ws5.fg"
printf 'graph t {\n  input x : f16[512, 32768]\n  input g : f16[32768]\n  input b : f16[32768]\n  y = layernorm(x, g, b)\n  output y\n}\n' >"$tmp/ws6.fg"
if "$fgc" compile "$tmp/ws1.fg" -o "$tmp/ws1" && grep -q 'fg_cluster_reduce<8>(.*, FgWelfordSteps(), turn++);' "$tmp/ws1.cu" &&
   "$fgc" compile "$tmp/ws2.fg" -o "$tmp/ws2" && grep -q 'fg_cluster_reduce<4>(.*, FgWelford(), turn++);' "$tmp/ws2.cu" &&
   "$fgc" compile "$tmp/ws3.fg" -o "$tmp/ws3" && [ "$(grep -c 'fg_cluster_reduce<8>(' "$tmp/ws3.cu")" = 1 ] &&
   grep -q 'fg_cluster_reduce<8>(acc_.*, FgWelfordSteps(), turn++);' "$tmp/ws3.cu" &&
   "$fgc" compile "$tmp/ws4.fg" -o "$tmp/ws4" && [ "$(grep -c 'fg_cluster_reduce<8>(' "$tmp/ws4.cu")" = 1 ] &&
   grep -q 'fg_cluster_reduce<8>(acc_.*, FgWelford(), turn++);' "$tmp/ws4.cu" &&
   "$fgc" compile "$tmp/ws5.fg" -o "$tmp/ws5" && [ "$(grep -c 'fg_cluster_reduce<' "$tmp/ws5.cu")" = 1 ] &&
   grep -q 'fg_cluster_reduce<.*>(pair_.*, FgOnlineSoftmax(), turn++);' "$tmp/ws5.cu" &&
   "$fgc" compile "$tmp/ws6.fg" -o "$tmp/ws6" && grep -q "rowreduce.smem" "$tmp/ws6.cu" &&
   [ "$(grep -c 'fg_block_reduce(acc_.*, FgSum());' "$tmp/ws6.cu")" = 2 ] && ! grep -q 'FgWelford\|FgMoments' "$tmp/ws6.cu"; then
  pass=$((pass + 1)); echo "PASS compile: a 16-bit staged row paired in a cluster, not in a block of its own; moments in steps for few rows, Welford's chain for many"
else
  fail=$((fail + 1)); echo "FAIL compile: a 16-bit staged row's pair (a cluster's, a block's), or the moments' combine, for few rows or for many"
fi

# Fast transcendentals (gen.c's FAST table): an f16 or bf16 gelu, sigmoid,
# silu, exp or tanh takes its fast form, an f32 one and any under
# --accurate-math the accurate one (their errors: tests/runtime/fast_math.cu)
printf 'graph t {\n  input x : f16[64]\n  input z : f32[64]\n  input w : bf16[64]\n  y = gelu(x) + exp(x)\n  u = sigmoid(z) + silu(z) + tanh(z)\n  v = silu(w) * sigmoid(w) * tanh(w)\n  output y\n  output u\n  output v\n}\n' >"$tmp/fast.fg"
if "$fgc" compile "$tmp/fast.fg" -o "$tmp/f1" &&
   grep -q "fg_fast_gelu(" "$tmp/f1.cu" && grep -q "fg_fast_exp(" "$tmp/f1.cu" &&
   grep -q "fg_fast_silu(" "$tmp/f1.cu" && grep -q "fg_fast_sigmoid(" "$tmp/f1.cu" &&
   grep -q "= fg_sigmoid(" "$tmp/f1.cu" && grep -q "= fg_silu(" "$tmp/f1.cu" &&
   grep -q "= fg_fast_tanh(" "$tmp/f1.cu" && grep -q "= tanhf(" "$tmp/f1.cu" &&
   "$fgc" compile "$tmp/fast.fg" --accurate-math -o "$tmp/f2" && ! grep -q "fg_fast_" "$tmp/f2.cu" &&
   grep -q "= fg_gelu(" "$tmp/f2.cu" && grep -q "= expf(" "$tmp/f2.cu" && grep -q "= tanhf(" "$tmp/f2.cu"; then
  pass=$((pass + 1)); echo "PASS compile: fast forms for f16 and bf16, accurate ones for f32 and --accurate-math"
else
  fail=$((fail + 1)); echo "FAIL compile: fast and accurate forms by dtype and --accurate-math"
fi

# Programmatic dependent launch by default (every kernel's first statement
# fg_grid_wait, every launch fg_launch; run-cuda-compile holds every
# sample to it), plain <<<>>> launches and no wait under --no-pdl
if [ "$(grep -c "^	fg_grid_wait();$" "$tmp/f1.cu")" -eq "$(grep -c "^__global__" "$tmp/f1.cu")" ] &&
   grep -q "^	fg_launch(" "$tmp/f1.cu" && ! grep -q "<<<" "$tmp/f1.cu" &&
   "$fgc" compile "$tmp/fast.fg" --no-pdl -o "$tmp/f3" && ! grep -q "fg_grid_wait\|fg_launch(" "$tmp/f3.cu" &&
   [ "$(grep -c "<<<" "$tmp/f3.cu")" -eq "$(grep -c "^	fg_launch(" "$tmp/f1.cu")" ]; then
  pass=$((pass + 1)); echo "PASS compile: programmatic dependent launch by default, plain launches under --no-pdl"
else
  fail=$((fail + 1)); echo "FAIL compile: programmatic dependent launch (fg_grid_wait, fg_launch) or --no-pdl"
fi

for d in o o1 o2 o3 o4 o5; do
  if [ -e "$tmp/$d" ]; then fail=$((fail + 1)); echo "FAIL a failed run left $d behind"; fi
done

# Help goes to stdout with status 0; the same seed gives the same bytes.
if "$fgc" --help | grep -q "usage: fgc"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL --help"; fi
"$fgc" run "$good" --outputs "$tmp/s1" --seed 5 && "$fgc" run "$good" --outputs "$tmp/s2" --seed 5 &&
  "$fgc" run "$good" --outputs "$tmp/s3" --seed 6
if cmp -s "$tmp/s1/y.npy" "$tmp/s2/y.npy" && ! cmp -s "$tmp/s1/y.npy" "$tmp/s3/y.npy"; then
  pass=$((pass + 1)); echo "PASS seeds"
else
  fail=$((fail + 1)); echo "FAIL seeds: same seed must repeat, another must differ"
fi
# --in-dtype: the same values in the dtypes under DIR/in-dtype, beside the
# f64 ones, and the reference unrounded as <f8 under DIR/f64; a running f32 sum of 65,536 drawn values ends elsewhere than the
# f64 one rounded once (286.91855 against 286.91794 at seed 0)
sm=$tmp/sum.fg
printf 'graph s {\n  input x : f32[65536]\n  y = sum(x, axis=0)\n  output y\n}\n' >"$sm"
expect 1 "--in-dtype belongs to 'run', not 'check'" -- check "$sm" --in-dtype
if "$fgc" run "$good" --outputs "$tmp/d1" --seed 5 --in-dtype && cmp -s "$tmp/d1/y.npy" "$tmp/s1/y.npy" &&
   [ -f "$tmp/d1/in-dtype/y.npy" ] && [ "$(ls "$tmp/d1" | tr '\n' ' ')" = "f64 in-dtype y.npy " ] &&
   head -c 128 "$tmp/d1/f64/y.npy" | grep -q "'descr': '<f8'" &&
   "$fgc" run "$sm" --outputs "$tmp/d2" --in-dtype && ! cmp -s "$tmp/d2/y.npy" "$tmp/d2/in-dtype/y.npy" &&
   "$fgc" run "$sm" --outputs "$tmp/d2" --seed 3 && [ ! -e "$tmp/d2/in-dtype" ] && [ ! -e "$tmp/d2/f64" ]; then
  pass=$((pass + 1)); echo "PASS run --in-dtype: the f64 outputs unchanged, the in-dtype and unrounded ones beside them, and different; a run without it removes them"
else
  fail=$((fail + 1)); echo "FAIL run --in-dtype"
fi
# --inputs DIR lacking a file: an error listing what is missing and what
# DIR holds (a file differing only in case suggested), no output; with
# --draw-missing the missing ones are drawn.
two=$tmp/two.fg
printf 'graph t {\n  input res : f32[4]\n  input x : f32[4]\n  y = res + x\n  output y\n}\n' >"$two"
mkdir -p "$tmp/case_in"
"$fgc" run "$good" --outputs "$tmp/gx" --seed 3 >/dev/null 2>&1 && cp "$tmp/gx/y.npy" "$tmp/case_in/Res.npy" &&
  cp "$tmp/gx/y.npy" "$tmp/case_in/other.npy"
expect 1 "has no file for 2 of the 2 inputs and params: res.npy, x.npy; it holds Res.npy, other.npy; did you mean 'Res.npy' for 'res'? (--draw-missing draws the missing ones from the seed)" -- run "$two" --inputs "$tmp/case_in" --outputs "$tmp/case_out"
if [ ! -e "$tmp/case_out" ] && "$fgc" run "$good" --inputs "$tmp/case_in" --draw-missing --outputs "$tmp/case_out2" 2>"$tmp/err" &&
   [ -f "$tmp/case_out2/y.npy" ]; then
  pass=$((pass + 1)); echo "PASS run --inputs: nothing written after the listing; --draw-missing draws"
else
  fail=$((fail + 1)); echo "FAIL run --inputs without a file:"; head -5 "$tmp/err"
fi
# A tensor past 2^40 bytes is a warning naming it; the file still checks.
if "$fgc" check "$good" -D B=100000000000 2>"$tmp/err" && grep -q "warning: 'x' f32\[100000000000,3\] holds 1.09 TiB, past 2^40 bytes" "$tmp/err" &&
   [ "$(grep -c warning: "$tmp/err")" -eq 2 ] && "$fgc" check "$good" -D B=1000 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
  pass=$((pass + 1)); echo "PASS check: a tensor past 2^40 bytes is a warning naming it, none below"
else
  fail=$((fail + 1)); echo "FAIL check's 2^40 warning:"; head -5 "$tmp/err"
fi
# Run-time errors (language.md): an index out of range and an integer
# zero divisor stop fgc run with the op, the value and the position, exit
# status 1, and no output written.
npy_i32() {     # npy_i32 FILE V...: a 1-d i32 .npy of the values
  python3 -c 'import struct, sys
v = [int(a) for a in sys.argv[2:]]
h = "{\x27descr\x27: \x27<i4\x27, \x27fortran_order\x27: False, \x27shape\x27: (%d,), }" % len(v)
h += " " * (63 - (10 + len(h)) % 64) + "\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<%di" % len(v), *v))' "$@"
}
ix=$tmp/ix.fg
printf 'graph e {\n  input ids : i32[4]\n  param table : f32[10, 3]\n  input d : i32[4]\n  y = gather(table, ids)\n  q = floordiv(ids, d)\n  output y, q\n}\n' >"$ix"
mkdir -p "$tmp/ix_in" "$tmp/dz_in" "$tmp/ok_in"
npy_i32 "$tmp/ix_in/ids.npy" 3 -10 10 -11 && npy_i32 "$tmp/ix_in/d.npy" 1 1 1 1
npy_i32 "$tmp/dz_in/ids.npy" 3 -10 9 0 && npy_i32 "$tmp/dz_in/d.npy" 1 2 0 0
npy_i32 "$tmp/ok_in/ids.npy" 9 -10 0 -1 && npy_i32 "$tmp/ok_in/d.npy" -3 2 5 -1
expect 1 "ix.fg:5:7: error: gather index 10 out of range [-10, 10) at ids[2]" -- run "$ix" --inputs "$tmp/ix_in" --draw-missing --outputs "$tmp/ix_out"
expect 1 "ix.fg:6:7: error: integer division by zero in 'floordiv' at q[2]" -- run "$ix" --inputs "$tmp/dz_in" --draw-missing --outputs "$tmp/dz_out"
if [ ! -e "$tmp/ix_out" ] && [ ! -e "$tmp/dz_out" ] && grep -qxF "    q = floordiv(ids, d)" "$tmp/err" &&
   [ "$(grep -c error: "$tmp/err")" -eq 1 ]; then
  pass=$((pass + 1)); echo "PASS run-time errors: no output written, the source line quoted"
else
  fail=$((fail + 1)); echo "FAIL run-time errors wrote an output or quoted no line"; cat "$tmp/err"
fi
if "$fgc" run "$ix" --inputs "$tmp/ok_in" --draw-missing --outputs "$tmp/ok_out" 2>"$tmp/err" && [ -f "$tmp/ok_out/q.npy" ]; then
  pass=$((pass + 1)); echo "PASS run: indices at both ends of [-n, n) and nonzero divisors run"
else
  fail=$((fail + 1)); echo "FAIL run with valid indices:"; head -5 "$tmp/err"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
