package train

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/transform"
)

// helper is a second goroutine with its own copies of the transforms. Jobs
// and completions are signalled with a short spin before parking: a step
// takes about 100 µs, comparable to waking a parked goroutine, which a plain
// channel would pay twice per step; parking after the spin keeps a loaded
// machine from wasting a core.
//
// It is not a worker loop over independent items, so it does not use
// internal/par: it is one partner of the sequential SGD step, which hands
// it half of every step's evaluations and the next query's noise and waits
// for them within the same step (thousands of hand-offs per second, each a
// few dozen µs of work). par.Run would start goroutines per step, and
// par.Team's members cannot be handed work; the hand-off's correctness is
// tested on its own (helper_test.go, also under -race).
type helper struct {
	f, h    transform.Transform
	nf      int
	version int
	bias    int // adaptive offset of the work split
	job     helpJob

	posted, acked, idle signal // jobs posted; evaluations done; noise done too
	stop                atomic.Bool
}

type helpJob struct {
	version         int
	params          []float64 // read-only while the job runs
	xs, vals, jac   []float64
	xp, hvals, hjac []float64
	grid            []float64
	noise           noiseTask // drawn after the evaluations are acknowledged
	sigma           float64
}

// signal is a counter one goroutine raises and another awaits.
type signal struct {
	n      atomic.Int64
	parked atomic.Bool
	wake   chan struct{} // capacity 1
}

func newSignal() signal { return signal{wake: make(chan struct{}, 1)} }

func (s *signal) raise() {
	s.n.Add(1)
	s.unpark()
}

func (s *signal) unpark() {
	if s.parked.CompareAndSwap(true, false) {
		s.wake <- struct{}{}
	}
}

// await returns once the counter reaches target (or stop is set, if
// non-nil), spinning for about spin before parking. It reports whether the
// counter was not yet there on entry.
func (s *signal) await(target int64, spin time.Duration, stop *atomic.Bool) bool {
	if s.n.Load() >= target {
		return false
	}
	var deadline time.Time
	for i := 1; s.n.Load() < target; i++ {
		if stop != nil && stop.Load() {
			break
		}
		if i&63 != 0 {
			continue
		}
		runtime.Gosched()
		if deadline.IsZero() {
			deadline = time.Now().Add(spin)
			continue
		}
		if time.Now().Before(deadline) {
			continue
		}
		s.parked.Store(true)
		if s.n.Load() >= target || stop != nil && stop.Load() {
			if !s.parked.CompareAndSwap(true, false) {
				<-s.wake // the raiser already claimed the wake-up: take its token
			}
		} else {
			<-s.wake
		}
		deadline = time.Time{}
	}
	return true
}

func (hp *helper) run() {
	var last int64
	for {
		hp.posted.await(last+1, spinWait, &hp.stop)
		if hp.stop.Load() {
			return
		}
		last++
		j := &hp.job
		if j.version != hp.version {
			// The parameters were validated by the trainer's setParams.
			_ = hp.f.SetParams(j.params[:hp.nf])
			if hp.h != nil {
				_ = hp.h.SetParams(j.params[hp.nf:])
			}
			hp.version = j.version
		}
		values(hp.f, hp.nf, j.xs, j.vals, j.jac)
		if hp.h != nil {
			values(hp.h, hp.h.NumParams(), j.xp, j.hvals, j.hjac)
		}
		grid(hp.f, j.grid)
		hp.acked.raise()
		if j.noise.q != nil {
			drawInto(j.noise.r, j.sigma, j.noise.q, j.noise.buf)
		}
		hp.idle.raise()
	}
}

// startHelper starts the helper goroutine if more than one CPU is usable.
func (t *trainer) startHelper() {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	t.launchHelper()
}

// launchHelper starts the helper goroutine whatever the CPU count (tests
// use it to exercise the two-goroutine path on one CPU).
func (t *trainer) launchHelper() {
	if t.hp != nil {
		return
	}
	hp := &helper{f: t.f.Clone(), nf: t.nf, version: -1, posted: newSignal(), acked: newSignal(), idle: newSignal()}
	if t.h != nil {
		hp.h = t.h.Clone()
	}
	t.hp = hp
	go hp.run()
}

// stopHelper ends the helper goroutine.
func (t *trainer) stopHelper() {
	if t.hp != nil {
		t.hp.stop.Store(true)
		t.hp.posted.unpark()
		t.hp = nil
	}
}
