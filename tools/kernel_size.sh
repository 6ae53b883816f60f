#!/usr/bin/env bash
# kernel_size.sh CU [RUNTIME_DIR] [PATTERN] - each kernel of a generated .cu
# compiled for sm_90a here (no GPU): its instructions (the cubin's .text
# bytes / 16: every path of the kernel, not the ones a launch takes), its
# registers and its spilled bytes, from `nvcc -cubin -Xptxas -v`.  Where
# cuobjdump is missing (this machine), the count that compares two
# versions of a kernel (docs/performance.md v19, v25).  RUNTIME_DIR:
# default the runtime/ beside this script; PATTERN: kernels whose mangled
# name matches it (grep -E), default all.
set -eu
cu=$1 rt=${2:-$(dirname "$0")/../runtime} pat=${3:-.}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
"$nvcc" -O3 -gencode=arch=compute_90a,code=sm_90a -I"$rt" -cubin -Xptxas -v "$cu" -o "$tmp/k.cubin" 2>"$tmp/log"
readelf -SW "$tmp/k.cubin" 2>/dev/null | sed -n 's/.* \.text\.\([^ ]*\) *PROGBITS *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\) .*/\1 \2/p' |
while read -r name size; do
	echo "$name" | grep -Eq -- "$pat" || continue
	info=$(grep -A3 "Compiling entry function '$name'" "$tmp/log")
	regs=$(echo "$info" | sed -n 's/.*Used \([0-9]*\) registers.*/\1/p')
	spill=$(echo "$info" | sed -n 's/.* \([0-9]*\) bytes spill stores.*/\1/p')
	printf '%6d instructions %4s registers %4s bytes spilled  %s\n' $((16#$size / 16)) "$regs" "$spill" "$name"
done
