package cli

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoadPhase runs loadPhase's clients (par.Team) against an operation
// that fails every third call: every request is counted once, as ok or as
// an error, with the first error's text; a cancelled context ends the phase
// before its duration.
func TestLoadPhase(t *testing.T) {
	var calls atomic.Int64
	op := func(*rand.Rand) error {
		if calls.Add(1)%3 == 0 {
			return errors.New("boom")
		}
		return nil
	}
	rep := loadPhase(context.Background(), 3, 20*time.Millisecond, op)
	if rep.Requests != calls.Load() || rep.OK+rep.Errors != rep.Requests || rep.Errors == 0 || rep.FirstError != "boom" {
		t.Fatalf("report %+v after %d calls", rep, calls.Load())
	}
	if !(rep.Seconds >= 0.02) || rep.Throughput <= 0 || rep.P50ms > rep.P99ms || rep.P99ms > rep.Maxms {
		t.Fatalf("report %+v", rep)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := loadPhase(ctx, 2, time.Hour, op); rep.Requests != 0 {
		t.Fatalf("cancelled phase sent %d requests", rep.Requests)
	}
}
