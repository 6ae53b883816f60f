#!/bin/bash
# outlier-margin.sh LOG... - over the "ok" lines of RMSE-gated values (verify or
# --check output), the largest ratio of max abs err to the outlier bound
# without its magnitude factor, atol + K * (limit - atol): an upper bound of how
# close any passing element came to the outlier bound.  K is the runtime's
# (runtime/fgrt.h FGRT_OUTLIER_K); atol is 1e-5 for every float dtype
# (runtime/check.c fgrt_tolerance).
k=$(sed -n 's/^#define FGRT_OUTLIER_K \([0-9.]*\).*/\1/p' "$(dirname "$0")/../runtime/fgrt.h")
[ -n "$k" ] || { echo "outlier-margin.sh: no FGRT_OUTLIER_K in runtime/fgrt.h" >&2; exit 1; }
cat "$@" | awk -v k="$k" '/^ok .*rmse .* <= / {
  for (i = 1; i <= NF; i++) { if ($i == "err") e = $(i+1); if ($i == "<=") l = $(i+1) }
  bar = 1e-5 + k * (l - 1e-5); r = e / bar; n++;
  if (r > m) { m = r; w = $2 " " $3 " err " e " limit " l }
  if (r > 0.5) big++
} END { printf "%d RMSE-gated values; worst max-err / (atol + %g (limit - atol)) = %.3f (%s); over 0.5: %d\n", n, k, m, w, big }'
