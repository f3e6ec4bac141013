#!/usr/bin/env bash
# The dependency rule (docs/ARCHITECTURE.md): library packages never import
# the research harness, the command line (cobra/pflag) or the progress bar.
# Fails with the offending package and import.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/dplp/dplp
# The library: everything that a deployment links, i.e. the facade and the
# packages below it.
lib=(. ./release ./ledger ./serve ./model ./calib ./mech ./mech/exact ./score ./graph ./protect ./transform ./randx ./sampling ./account ./accountant ./snapshot ./metrics)
status=0
for p in "${lib[@]}"; do
  [ -d "$p" ] || continue
  deps=$(go list -deps "$p")
  bad=$(echo "$deps" | grep -E "^$mod/research(/|\$)|^github.com/spf13/(cobra|pflag)|^github.com/schollz/progressbar|^$mod/internal/progress" || true)
  if [ -n "$bad" ]; then
    echo "dependency rule broken: $p imports"; echo "$bad" | sed 's/^/  /'
    status=1
  fi
done
exit $status
