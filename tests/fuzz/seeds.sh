#!/usr/bin/env bash
# The seed corpus of both fuzzers (run.sh, libFuzzer; afl.sh, AFL++):
# fills DIR/fg with the committed corpus, the samples and every test .fg,
# DIR/npy with the committed corpus and the golden .npy inputs, and
# DIR/json with the timings of tests/measured, each file named after its
# path.
# Usage: tests/fuzz/seeds.sh DIR   (from the repository root)
set -euo pipefail
dir=$1
mkdir -p "$dir/fg" "$dir/npy" "$dir/json"
cp tests/fuzz/corpus/fg/* "$dir/fg/" 2>/dev/null || true
for f in samples/*.fg tests/*/*.fg tests/golden/interp/*.fg; do cp "$f" "$dir/fg/$(echo "$f" | tr / _)"; done
cp tests/fuzz/corpus/npy/* "$dir/npy/" 2>/dev/null || true
for f in tests/golden/interp/*/in/*.npy; do cp "$f" "$dir/npy/$(echo "$f" | tr / _)"; done
for f in tests/measured/*.json; do cp "$f" "$dir/json/$(echo "$f" | tr / _)"; done
