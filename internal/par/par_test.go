package par

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestRunEveryItemOnce(t *testing.T) {
	for _, opt := range []Options{{}, {Workers: 1}, {Workers: 4, Chunk: 7}, {MinPerWorker: 1000}} {
		const n = 10007
		var seen [n]atomic.Int32
		states := atomic.Int32{}
		err := Run(context.Background(), n, opt, func(int) *int { states.Add(1); return new(int) }, func(s *int, i int) error {
			*s++
			seen[i].Add(1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Fatalf("%+v: item %d ran %d times", opt, i, seen[i].Load())
			}
		}
		if opt.Workers == 1 && states.Load() != 1 {
			t.Fatalf("one worker built %d states", states.Load())
		}
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var ran atomic.Int64
	err := Run(context.Background(), 1_000_000, Options{Workers: 4}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
		ran.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	if ran.Load() > 500_000 {
		t.Fatalf("%d items ran after the error", ran.Load())
	}
}

func TestRunHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int64
	err := Run(ctx, 1_000_000, Options{Workers: 2}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
		if ran.Add(1) == 100 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || ran.Load() > 500_000 {
		t.Fatalf("err %v after %d items", err, ran.Load())
	}
	if err := Run(ctx, 10, Options{Workers: 1}, func(int) int { return 0 }, func(int, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("one worker: %v", err)
	}
}
