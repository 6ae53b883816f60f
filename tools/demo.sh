#!/usr/bin/env bash
# The main job on one sample: build fgc (installing what is missing),
# type-check the sample, print its fusion report, run it on the reference
# interpreter at its test sizes, and where a GPU is present, compile the
# fused binary, run it and check it against the interpreter's outputs.
# Usage: tools/demo.sh [SAMPLE.fg [-D NAME=VALUE ...]]
set -euo pipefail
cd "$(dirname "$0")/.."
sample=${1:-samples/softmax_f16.fg}
shift || true
dims=("$@")
if [ ${#dims[@]} -eq 0 ]; then
  # Each sample names small sizes for tests in a `# test-dims:` line.
  read -r -a dims <<<"$(sed -n 's/^# test-dims://p' "$sample")"
fi
# FGC=path/to/fgc uses a compiler built elsewhere (a GPU machine without
# flex and bison); otherwise build here.
fgc=${FGC:-build/fgc}
[ -n "${FGC:-}" ] || tools/setup.sh build
echo "== fgc check $sample"
$fgc check "$sample"
echo "== fgc report $sample"
$fgc report "$sample"
out=out/$(basename "$sample" .fg)
echo "== fgc run $sample ${dims[*]} --outputs $out (reference interpreter)"
$fgc run "$sample" "${dims[@]}" --seed 7 --outputs "$out"
export PATH=$PATH:/usr/local/cuda/bin
if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  echo "== fgc compile $sample ${dims[*]} --build, run on the GPU, check against the interpreter"
  mkdir -p "$out.gpu"
  $fgc compile "$sample" "${dims[@]}" -o "$out.gpu/model" --build
  "$out.gpu/model" --seed 7 --outputs "$out.gpu" --check "$out"
else
  echo "(no GPU here: the fused binary is built and checked on a GPU machine with Makefile.gpu)"
fi
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { ls -l "$out"; exit 0; }
for f in "$out"/*.npy; do
  /usr/bin/python3 -c 'import numpy, sys
a = numpy.load(sys.argv[1]); d = a.astype("float64")
print("%-32s %-8s %-12s mean %+.6f  min %+.6f  max %+.6f" % (sys.argv[1], a.dtype, a.shape, d.mean(), d.min(), d.max()))' "$f"
done
