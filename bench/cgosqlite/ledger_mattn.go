//go:build cgosqliteoverlay

package main

import (
	"context"

	"github.com/dplp/dplp/ledger"
)

// overlayBuilt: this binary carries the ledger overlay (_overlay), so the
// real ledger code can run on the cgo driver.
const overlayBuilt = true

// openLedgerMattn opens the real ledger.Store on path through the cgo
// driver, by the constructor that overlay.json adds to package ledger.
func openLedgerMattn(ctx context.Context, path string) (ledger.Store, error) {
	db, err := openDB(ctx, Mattn, path)
	if err != nil {
		return nil, err
	}
	return ledger.OpenSQLiteDBForBench(ctx, db)
}
