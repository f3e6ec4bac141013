#!/usr/bin/env bash
# Measured privacy: runs `dplp attack` (triad, sybil and no-noise games) on the
# paper's five graphs for the releases that need no trained model
# (non-private; exponential and one-shot Laplace, each with the rigorous and the
# reference calibration) and writes
#   docs/img/attack-results.jsonl   every result (dplp attack --json)
#   docs/img/attack-results.csv     the same as CSV
#   docs/img/attack-eps-lb.{png,svg} eps lower bound against the claimed eps
# and prints the markdown table of docs/RESULTS.md ("What an attacker learns").
# Setting: AA, sigma 0.3 of edges protected (seed 1), K 10, one list per observer
# (3 sybils), eps_p 0.1 and 1, 1000 trials per game. A few minutes on 2 cores.
# Usage (from the repository root): scripts/attacks.sh [DATA_DIR]
set -euo pipefail
data=${1:-../shared/datasets}
out=docs/img
mkdir -p runs "$out"
go build -o runs/dplp-attacks ./cmd/dplp
dplp=runs/dplp-attacks
res=$out/attack-results.jsonl
: > "$res"
common=(--score aa --sigma 0.3 --k 10 --lists 1 --trials 1000 --seed 1 --json)
start=$SECONDS
for d in usair twitter yeast pb facebook; do
  for a in triad sybil no-noise; do
    $dplp attack --graph "$data/$d.txt" --attack "$a" --method nonprivate "${common[@]}" >> "$res"
    for m in exponential laplace; do
      for c in rigorous reference; do
        for e in 0.1 1; do
          $dplp attack --graph "$data/$d.txt" --attack "$a" --method "$m" --calibration "$c" --eps "$e" "${common[@]}" 2>/dev/null >> "$res"
        done
      done
    done
  done
  echo "$d done ($((SECONDS - start)) s)" >&2
done
# Graph paths to dataset names in the saved results.
sed -i -E 's#"graph":"[^"]*/([a-z]+)\.txt"#"graph":"\1"#' "$res"
$dplp attack report "$res" --csv "$out/attack-results.csv" --plot "$out/attack-eps-lb" \
  --title "Attacks on 5 graphs (AA, K 10): eps lower bound vs claim"
echo "total $((SECONDS - start)) s" >&2
