#!/usr/bin/env bash
# The main job on one sample: build fgc (installing what is missing),
# type-check the sample, print its fusion report, and run it.  Until the CUDA backend lands, it runs on the reference interpreter
# (f64, small sizes) on every machine.
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
tools/setup.sh build
fgc=build/fgc
echo "== fgc check $sample"
$fgc check "$sample"
echo "== fgc report $sample"
$fgc report "$sample"
out=out/$(basename "$sample" .fg)
echo "== fgc run $sample ${dims[*]} --outputs $out (reference interpreter)"
$fgc run "$sample" "${dims[@]}" --outputs "$out"
for f in "$out"/*.npy; do
  /usr/bin/python3 -c 'import numpy, sys
a = numpy.load(sys.argv[1]); d = a.astype("float64")
print("%-32s %-8s %-12s mean %+.6f  min %+.6f  max %+.6f" % (sys.argv[1], a.dtype, a.shape, d.mean(), d.min(), d.max()))' "$f"
done
