#!/bin/bash
# outlier-margin.sh LOG... - over the "ok" lines of RMSE-gated values (verify or
# --check output), the largest ratio of max abs err to the outlier bound
# without its magnitude factor, atol + 10 * (limit - atol): an upper bound of how
# close any passing element came to the outlier bound.
cat "$@" | awk '/^ok .*rmse .* <= / {
  for (i = 1; i <= NF; i++) { if ($i == "err") e = $(i+1); if ($i == "<=") l = $(i+1) }
  bar = 1e-5 + 10 * (l - 1e-5); r = e / bar; n++;
  if (r > m) { m = r; w = $2 " " $3 " err " e " limit " l }
  if (r > 0.5) big++
} END { printf "%d RMSE-gated values; worst max-err / (atol + 10 (limit - atol)) = %.3f (%s); over 0.5: %d\n", n, m, w, big }'
