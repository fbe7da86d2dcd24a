#!/usr/bin/env bash
# Stochastic CAVI at scale: one process per N (so that peak memory is per N), then the
# full-batch sparse CAVI reference at the largest N. Prints the tables of
# crates/gpmc/benches/svi_scale.rs. Not a test: run on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
for n in 100000 300000 1000000; do
  cargo bench -q -p gpmc --bench svi_scale -- --n "$n" --m 100 --batch 1000 --epochs 2 \
    $( [ "$n" = 1000000 ] && echo --cavi )
done
