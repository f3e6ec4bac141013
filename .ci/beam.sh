#!/usr/bin/env bash
# The Beam pipeline (beam/, its own Go module): vet and tests on the Prism
# runner in-process. Cold build cache: about 4 min of CPU (Beam and its cloud
# dependencies), 8 min wall measured on 2 busy shared cores; warm: under 1 min.
# Called from .ci/run.
set -euo pipefail
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/../beam"

echo "== beam: gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi

echo "== beam: go vet"
go vet ./...

echo "== beam: go test (Prism, in-process)"
go test ./...
