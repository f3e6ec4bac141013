package par

import (
	"context"
	"errors"
	"runtime"
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

func TestRunReportsLowestFailingItem(t *testing.T) {
	// Items 300 and 301 fail, 301 much sooner than 300 on its worker: the
	// error is still item 300's, at any worker count and chunk size.
	for _, opt := range []Options{{Workers: 1}, {Workers: 2}, {Workers: 4, Chunk: 3}, {Workers: 8, Chunk: 64}} {
		for range 20 {
			var ran [1000]atomic.Bool
			err := Run(context.Background(), 1000, opt, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
				ran[i].Store(true)
				switch i {
				case 300:
					for range 100 { // slow
						runtime.Gosched()
					}
					return errAt(300)
				case 301:
					return errAt(301)
				}
				return nil
			})
			if err != errAt(300) {
				t.Fatalf("%+v: err %v, want item 300's", opt, err)
			}
			for i := range 300 {
				if !ran[i].Load() {
					t.Fatalf("%+v: item %d before the failure did not run", opt, i)
				}
			}
		}
	}
}

type errAt int

func (e errAt) Error() string { return "item failed" }

func TestTeam(t *testing.T) {
	// Every member runs, concurrently: each waits until all have started.
	const k = 4
	var started atomic.Int32
	err := Team(context.Background(), k, func(ctx context.Context, w int) error {
		started.Add(1)
		for started.Load() < k {
			runtime.Gosched()
		}
		return nil
	})
	if err != nil || started.Load() != k {
		t.Fatalf("err %v, %d started", err, started.Load())
	}

	// A failing member cancels the others' context; its error is returned.
	boom := errors.New("boom")
	err = Team(context.Background(), k, func(ctx context.Context, w int) error {
		if w == 2 {
			return boom
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}

	// One member runs on the calling goroutine; a done context starts nobody.
	ran := 0
	if err := Team(context.Background(), 1, func(context.Context, int) error { ran++; return nil }); err != nil || ran != 1 {
		t.Fatalf("one member: err %v, ran %d", err, ran)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Team(ctx, k, func(context.Context, int) error { ran++; return nil }); !errors.Is(err, context.Canceled) || ran != 1 {
		t.Fatalf("cancelled: err %v, ran %d", err, ran)
	}
}

// Reserve takes a core out of the default worker count while held, never
// below one worker; release is idempotent; explicit Workers are kept.
func TestReserve(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if got := DefaultWorkers(); got != 3 {
		t.Fatalf("%d default workers, want 3", got)
	}
	r1 := Reserve()
	if got := DefaultWorkers(); got != 2 {
		t.Fatalf("%d default workers with a core reserved, want 2", got)
	}
	var states atomic.Int32
	_ = Run(context.Background(), 1000, Options{}, func(int) struct{} { states.Add(1); return struct{}{} }, func(struct{}, int) error { return nil })
	if states.Load() > 2 {
		t.Fatalf("Run started %d workers with a core reserved", states.Load())
	}
	r2, r3 := Reserve(), Reserve()
	if got := DefaultWorkers(); got != 1 {
		t.Fatalf("%d default workers with every core reserved, want 1", got)
	}
	r3()
	r3()
	r2()
	if got := DefaultWorkers(); got != 2 {
		t.Fatalf("%d default workers after a double release, want 2", got)
	}
	r1()
	if got := DefaultWorkers(); got != 3 {
		t.Fatalf("%d default workers after every release, want 3", got)
	}
}
