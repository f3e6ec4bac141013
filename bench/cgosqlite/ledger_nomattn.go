//go:build !cgosqliteoverlay

package main

import (
	"context"
	"errors"

	"github.com/dplp/dplp/ledger"
)

const overlayBuilt = false

var errNoOverlay = errors.New("the ledger path on the cgo driver needs the overlay build: go run -tags cgosqliteoverlay -overlay overlay.json . (see README.md)")

func openLedgerMattn(context.Context, string) (ledger.Store, error) { return nil, errNoOverlay }
