#!/usr/bin/env bash
# The Beam pipeline (beam/, its own Go module): vet and tests on the Prism
# runner in-process. Cold build cache: 3 min 13 s wall, 4 min 47 s of CPU
# (Beam and its cloud dependencies) on 2 quiet cores, 8 min on busy ones;
# warm: about 2 min on 2 shared cores (the tests, including the canonical-
# numbering and private-release tests, took 107 s under load).
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

echo "== beam: go mod tidy is clean"
go mod tidy -diff
