#!/usr/bin/env bash
# Non-private SEAL-style evaluation (10% of edges held out, as many random
# non-edges, full-list ROC-AUC, 3 seeds) of every predictor on the paper's five
# graphs. Writes one JSON object per line to the file given (default
# docs/evallp.jsonl). Usage: scripts/evallp.sh [OUT] [DATA_DIR]
set -euo pipefail
out=${1:-docs/evallp.jsonl}
data=${2:-../shared/datasets}
dplp=${DPLP:-go run ./cmd/dplp}
: > "$out"
for s in cn aa jc pa node2vec deepwalk line gcn struc2vec prune; do
  for d in usair twitter yeast pb facebook; do
    res=$($dplp eval-lp --graph "$data/$d.txt" --score "$s" --holdout 0.1 --seeds 3 --json)
    echo "{\"score\":\"$s\",\"dataset\":\"$d\",${res#\{}" | tee -a "$out"
  done
done
