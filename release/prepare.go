package release

import (
	"context"
	"errors"
	"fmt"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// Preparation is the recording of a batch release's influence blocks
// started before its Recommender exists (StartPreparation), so that it
// runs while the scorer is fitted instead of after it.
//
// A batch over most of the graph records every influence block, and the
// labels of their members, before its first charge (Stream; docs/SCALE.md).
// That is mostly one core's SQL inserts, and it needs only the graph, the
// marks, the score kind and the store. Started early, it overlaps the
// scorer's sensitivity pass instead of leaving a core with little to do
// while Stream waits for it; while it runs it holds a core of its own
// (par.Reserve), so the pass runs on the others.
type Preparation struct {
	infl  influence
	store Store
	done  chan struct{}
	err   error // set before done is closed
}

// StartPreparation starts recording in st, in its own goroutine, the
// influence blocks that a batch release of n users of g with marks p and
// score kind k records first (what Stream does for such a batch), and
// returns at once. It returns nil when Stream would record nothing for
// that batch (fewer than half the graph's nodes or a small batch, a score
// other than CN, AA and RA, a store without the capability). Give the
// result to New with WithPreparation: a Stream of that Recommender waits
// for it instead of recording the blocks again, while it samples the first
// windows; nothing is charged before it ends, and its error stops the
// Stream. Cancelling ctx stops the recording. A release with exposure
// tracking off records no blocks: do not start one for it.
func StartPreparation(ctx context.Context, st Store, g *graph.Graph, p *protect.Set, k score.Kind, n int) *Preparation {
	if st == nil || g == nil || p == nil || p.N() != g.N() || !preparesFor(st, g, k, n) {
		return nil
	}
	pr := &Preparation{infl: newInfluence(g, p, k, NewInfluenceDict(g)), store: st, done: make(chan struct{})}
	// The recording is mostly one goroutine's SQL: it holds a core of its
	// own (par.Reserve), so the scorer's sensitivity pass beside it runs on
	// the others and both end about together.
	release := par.Reserve()
	go func() {
		defer close(pr.done)
		defer release()
		if err := st.(influencePreparer).PrepareInfluence(ctx, pr.infl.blockSet()); err != nil {
			pr.err = fmt.Errorf("release: %w", err)
		}
	}()
	return pr
}

// Wait blocks until the recording ends and returns its error.
func (pr *Preparation) Wait() error {
	<-pr.done
	return pr.err
}

// WithPreparation gives New the recording StartPreparation started for
// this Recommender's graph, marks and store; New refuses one made for
// others. A nil pr is ignored (StartPreparation had nothing to
// record).
func WithPreparation(pr *Preparation) Option {
	return func(r *Recommender) error {
		r.prepd = pr
		return nil
	}
}

// usePreparation checks the preparation given to New against the
// Recommender and takes its influence structure (and so its dictionary).
func (r *Recommender) usePreparation() error {
	pr := r.prepd
	switch {
	case pr.infl.g != r.g || pr.infl.p != r.p:
		return errors.New("release: the preparation was started for another graph or other marks")
	case pr.store != r.store:
		return errors.New("release: the preparation was started for another store")
	case r.dict != nil && r.dict != pr.infl.dict:
		return errors.New("release: the preparation has an influencer dictionary of its own: do not give New another")
	}
	// The blocks and the marks' classes do not depend on the score, so a
	// scorer of another kind than the one given to StartPreparation keeps
	// them (a kind without blocks records none: the recorded rows are
	// harmless).
	r.dict = pr.infl.dict
	r.infl = pr.infl
	r.infl.kind = r.sc.Kind()
	return nil
}

// preparation returns the channel a Stream of n users waits on for the
// influence blocks: the early recording's result when there is one (it
// records every block of the marks, whatever the batch), else a recording
// started now (nil when none is needed). A failed early recording is
// retried by this Stream.
func (r *Recommender) preparation(ctx context.Context, n int) chan error {
	if !r.preparesInfluence(n) {
		return nil
	}
	ch := make(chan error, 1)
	if pr := r.prepd; pr != nil {
		go func() {
			select {
			case <-pr.done:
			case <-ctx.Done():
				ch <- ctx.Err()
				return
			}
			if pr.err == nil {
				ch <- nil
				return
			}
			ch <- r.prepareInfluence(ctx, n)
		}()
		return ch
	}
	go func() { ch <- r.prepareInfluence(ctx, n) }()
	return ch
}
