#!/usr/bin/env bash
# The C SQLite comparison (bench/cgosqlite, its own Go module with cgo and
# mattn/go-sqlite3): vet and test it with and without the overlay that adds
# the bench hook to package ledger, and keep its go.mod tidy, so that it
# cannot rot while the ledger changes. The root module never builds it.
set -euo pipefail
export PATH="/usr/local/go/bin:$PATH"
cd "$(dirname "$0")/../bench/cgosqlite"
export CGO_ENABLED=1
ov=(-tags cgosqliteoverlay -overlay overlay.json)
go mod download
go mod tidy -diff
go vet .
go vet "${ov[@]}" .
go test .
go test "${ov[@]}" .
