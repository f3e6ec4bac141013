#!/usr/bin/env bash
# The dependency rule (docs/ARCHITECTURE.md): library packages never import
# the research harness, the command line (cobra/pflag) or the progress bar.
# Fails with the offending package and import.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/dplp/dplp
# The library: everything that a deployment links, i.e. the facade and the
# packages below it.
lib=(. ./release ./ledger ./serve ./model ./calib ./mech ./mech/exact ./mech/list ./mech/topk ./score ./graph ./protect ./transform ./randx ./embed/alias ./accountant ./snapshot ./ranking ./privunit ./train ./train/deploy ./audit ./audit/endtoend ./embed ./predict ./linkclf)
status=0
for p in "${lib[@]}"; do
  [ -d "$p" ] || continue
  deps=$(go list -deps "$p")
  bad=$(echo "$deps" | grep -E "^$mod/research(/|\$)|^$mod/cmd(/|\$)|^github.com/spf13/(cobra|pflag)|^github.com/schollz/progressbar|^$mod/internal/progress" || true)
  if [ -n "$bad" ]; then
    echo "dependency rule broken: $p imports"; echo "$bad" | sed 's/^/  /'
    status=1
  fi
done

# The research harness reports progress through callbacks: it never draws a
# progress bar itself. It takes plain configuration values: flags are bound
# by the command line (cmd/dplp/internal/cli), so it never imports cobra or
# pflag.
for p in $(go list ./research/...); do
  bad=$(go list -deps "$p" | grep -E "^github.com/schollz/progressbar|^$mod/internal/progress|^$mod/cmd(/|\$)|^github.com/spf13/(cobra|pflag)" || true)
  if [ -n "$bad" ]; then
    echo "dependency rule broken: $p imports"; echo "$bad" | sed 's/^/  /'
    status=1
  fi
done
exit $status
