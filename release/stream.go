package release

// Releasing lists: sampling, charging in windows, re-serving, refusals.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/internal/par"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

// alwaysPublic has sample compute the public scores even for a plan that
// does not read them (tests compare the two).
var alwaysPublic = false

// noHeld has sample extract every candidate (ScoreNoPublic) on the
// crypto-seeded path too (tests compare the two).
var noHeld = false

// sample draws one user's list (no accounting).
func (r *Recommender) sample(ws *workerState, u int32, k int, stream uint64) (Outcome, error) {
	if r.list != nil {
		return r.sampleList(ws, u, k, stream)
	}
	switch {
	case r.public || alwaysPublic:
		ws.w.Score(u, &ws.r)
	case r.seed == nil && !noHeld:
		// Crypto-seeded: the exact sampler reads the few candidates it
		// proposes from the scorer's table (the same list's distribution;
		// no pass over every candidate).
		ws.w.ScoreHeld(u, &ws.r)
	default:
		ws.w.ScoreNoPublic(u, &ws.r) // the same list; a smaller table to scatter into
	}
	res := &ws.r
	ws.in = ws.fns.input(res, r.g.N(), r.seed != nil)
	plan := r.cfg.Plan(calib.QueryOf(res))
	if err := checkPlan(&plan); err != nil {
		return Outcome{}, fmt.Errorf("release: user %s: %w", r.g.Label(u), err)
	}
	rng := rngFor(r.seed, r.g, u, stream, ws.crypto, &ws.seeded)
	return ws.s.Sample(&plan, &ws.in, k, rng)
}

func checkPlan(p *calib.Plan) error {
	if math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0) || p.Scale < 0 {
		return fmt.Errorf("noise scale %v is not a finite number >= 0", p.Scale)
	}
	return nil
}

// ledgerRelease turns an outcome into the record to charge.
func (r *Recommender) ledgerRelease(u int32, k int, out Outcome, idem string) ledger.Release {
	list := listLabels(r.g, out.IDs)
	if r.list != nil {
		// One charge per list, whatever K (accountant.PureList), in the
		// model's unit; seeded lists are charged as crypto ones.
		ch := accountant.PureList(out.ListEps)
		rel := ledger.Release{User: r.g.Label(u), Model: r.modelID, K: k, EpsP: r.list.spec.Eps, List: list,
			Cost: ch.Eps, Rho: ch.Rho, Seeded: r.seed != nil, IdemKey: idem, Unit: r.list.unit, PartyCost: ch.Eps}
		if r.store != nil {
			// The party-unit cost is recorded and capped by the ledger; a
			// release nobody charges (a benchmark) does not compute it.
			rel.PartyCost = r.list.partyCost(u, ch.Eps, out.Delta)
		} else if r.list.unit == privunit.Pair && ch.Eps > 0 {
			rel.PartyCost = ledger.Unbounded
		}
		if ch.Eps > 0 && r.store != nil && !r.noExposure {
			r.infl.record(&rel, u)
		}
		return rel
	}
	// A seeded list is charged what the same list would cost with crypto
	// noise (research runs spend the budget they would in deployment).
	gu := r.guarantee(out.Picks, false)
	if math.IsInf(gu.Eps, 1) {
		gu.Eps = 0 // non-private: nothing meaningful to charge; the ledger stores finite costs
	}
	rel := ledger.Release{User: r.g.Label(u), Model: r.modelID, K: k, EpsP: r.cfg.Eps, List: list,
		Cost: gu.Eps, Rho: gu.Rho, Seeded: r.seed != nil, IdemKey: idem, PartyCost: gu.Eps} // per-pick: party-unit
	if out.Picks > 0 && r.store != nil && !r.noExposure {
		r.infl.record(&rel, u)
	}
	return rel
}

// listLabels returns the labels of ids. When the graph's labels are its
// decimal ids they are formatted into one string and sliced from it rather
// than read from the label table (a random access into 160 MB at 10 M
// nodes) or formatted one string at a time: the labels of a list then lie
// together in memory when the ledger checks and encodes them, often long
// after they were formatted.
func listLabels(g *graph.Graph, ids []int32) []string {
	list := make([]string, len(ids))
	if !g.DecimalLabels() {
		for i, v := range ids {
			list[i] = g.Label(v)
		}
		return list
	}
	var buf [384]byte // 30 labels of up to 11 bytes without a heap buffer
	var ends [32]int
	b, e := buf[:0], ends[:0]
	for _, v := range ids {
		b = g.AppendLabel(b, v)
		e = append(e, len(b))
	}
	all := string(b)
	start := 0
	for i, end := range e {
		list[i] = all[start:end]
		start = end
	}
	return list
}

// Users resolves labels to node ids with a clear error for unknown ones.
func (r *Recommender) Users(labels []string) ([]int32, error) {
	ids := make([]int32, len(labels))
	for i, l := range labels {
		id, ok := r.g.ID(l)
		if !ok {
			return nil, fmt.Errorf("release: unknown user %q", l)
		}
		ids[i] = id
	}
	return ids, nil
}

// RefusedError reports users whose fresh list was refused by the cap.
type RefusedError struct{ Users []string }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("release: %d user(s) refused: %v (%v)", len(e.Users), e.Users, ledger.ErrBudgetExhausted)
}

// Unwrap makes errors.Is(err, ledger.ErrBudgetExhausted) hold.
func (e *RefusedError) Unwrap() error { return ledger.ErrBudgetExhausted }

// Recommend releases a top-k list for each user (labels), in parallel, and
// returns the results in the order of users. See the package comment for
// the guarantee and the accounting contract. opts choose, for this call
// only, fresh lists (Fresh) and an idempotency key (IdempotencyKey);
// without them the Recommender's defaults apply (sticky: a list already
// released to the user by this model at this K is re-served at no cost).
// Users refused by the cap get Result.Err set and no list; the error is
// then a *RefusedError (the other results are valid). Any other error
// aborts the call; lists charged before it are in the store.
func (r *Recommender) Recommend(ctx context.Context, users []string, k int, opts ...CallOption) ([]Result, error) {
	ids, err := r.Users(users)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(ids))
	err = r.Stream(ctx, ids, k, func(i int, res Result) error { out[i] = res; return nil }, opts...)
	if err != nil {
		return out, err
	}
	var refused []string
	for _, res := range out {
		if res.Err != nil {
			refused = append(refused, res.User)
		}
	}
	if refused != nil {
		return out, &RefusedError{Users: refused}
	}
	return out, nil
}

// Stream releases lists for users (node ids) and calls emit(i, result) in
// the order of users as soon as each result is ready and (with a store)
// its charge is committed. Memory is bounded by the windows of users in
// flight and sampled ahead of the charges (readyWindows: at least 24 and
// at most 512 of 4,096 users; those that wait hold only their lists' ids),
// independent of len(users).
// Charges are committed in batches of 4,096 users (one transaction per
// batch). emit is called from the caller's goroutine, one result at a
// time. A batch of one window (a service's request) is also sampled (on
// all cores) and charged from it, without the pipeline's goroutines. opts
// are per-call choices, as for Recommend.
//
// For large batches pass users in label order (graph.Graph.ByLabel): the
// ledger keys spending and releases by user label, so each transaction then
// appends to its indexes. Scattered orders make every transaction rewrite
// pages all over them (a million users on SQLite: 62-73 s of charging
// against 12-15 s, `dplp bench charge --order random|label`).
func (r *Recommender) Stream(ctx context.Context, users []int32, k int, emit func(i int, res Result) error, opts ...CallOption) error {
	if k < 1 {
		return fmt.Errorf("release: k must be >= 1, got %d", k)
	}
	for _, u := range users {
		if u < 0 || int(u) >= r.g.N() {
			return fmt.Errorf("release: user id %d out of range [0,%d)", u, r.g.N())
		}
	}
	c := r.callOf(opts)
	const batch = 4096 // users per charging transaction
	nw := max(1, runtime.GOMAXPROCS(0))
	if len(users) <= batch && !r.preparesInfluence(len(users)) {
		// One window (a service's request): prepared, charged and emitted
		// in the caller's goroutine, without the pipeline's goroutine and
		// channel (a hand-off per request).
		w, err := r.prepare(ctx, c, users, k, nw, false)
		if err != nil {
			return err
		}
		return r.chargeEmit(ctx, w, k, 0, emit)
	}
	// Two stages: while window w is charged (one transaction, mostly on one
	// core) and emitted, a producer goroutine samples the next windows on
	// the other cores, two in flight, into a backlog of up to readyWindows,
	// whatever the charges are doing (when it only refilled the two in
	// flight after each charge, a window finished during a charge left its
	// core idle: 6-9% of the machine in the 10 M release). A user in two
	// windows is still charged once for a sticky list: the charge's
	// idempotency key finds the first release.
	const ahead = 2
	// Workers per window: a batch of several windows samples each of the
	// two in flight with half the cores, so that the charging goroutine
	// (the stream's serial stage: the transaction and most of the
	// encoding) competes with two samplers per two cores instead of four;
	// the samplers still keep ahead of it. At 1 M users that made the
	// release 3-5% faster with exposure on and off, with 0.15-0.25 GB less
	// at the peak (fewer scorers' buffers). A batch of one window gets
	// every core.
	per := nw
	if len(users) > batch {
		per = max(1, nw/ahead)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A batch over most of the graph meets most influence blocks: the
	// store records them (and their labels) at once, before the first
	// charge, rather than in the charge transactions. That is mostly one
	// core's work (SQL inserts), so meanwhile the windows are sampled
	// ahead, with one worker (two starved the recording), up to
	// readyWindows of them.
	ready0 := readyWindows(len(users), batch)
	prep := r.preparation(pctx, len(users)) // nil when nothing is recorded first
	prepDone := make(chan struct{})         // closed once the recording is over
	if prep == nil {
		close(prepDone)
	}
	out := make(chan prepared, ready0) // sampled windows, in order: the backlog
	taken := make(chan struct{}, 1)    // a window taken out of the backlog
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		r.produce(pctx, c, users, k, batch, ahead, per, prepDone, out, taken)
	}()
	defer func() {
		// An error or a cancellation left work in flight: stop it and wait.
		cancel()
		for range out {
		}
		<-produced
		if prep != nil {
			<-prep
		}
	}()
	if prep != nil {
		err := <-prep
		prep = nil
		if err != nil {
			return err
		}
		close(prepDone)
	}
	var peek *window // the backlog's next window, taken out of out early
	for lo := 0; lo < len(users); lo += batch {
		w := peek
		peek = nil
		if w == nil {
			p, ok := <-out
			if !ok {
				return ctx.Err() // the producer stopped early: cancelled
			}
			if p.err != nil {
				return p.err
			}
			w = p.w
		}
		select {
		case taken <- struct{}{}:
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// While a backlog is charged, the next lean window's releases are
		// built beside this charge.
		select {
		case p, ok := <-out:
			if ok {
				if p.err != nil {
					return p.err
				}
				peek = p.w
				r.buildRecs(pctx, peek, k)
			}
		default:
		}
		if err := r.chargeEmit(ctx, w, k, lo, emit); err != nil {
			return err
		}
	}
	return nil
}

// backlogSlack is the smallest backlog from which Stream's producer keeps
// one window in flight instead of two (see produce and backlogLimit).
const backlogSlack = 4

// backlogLimit is the backlog (in windows) from which Stream's producer
// keeps one window in flight instead of two, when left users are still to
// be sampled: an eighth of the windows left, at least backlogSlack. With
// one sampler beside the charges, a core idled whenever the charging
// goroutine waited for the disk (a commit's sync): 5% of the machine in the
// 10 M release, with the limit at 4 windows throughout. Two samplers and
// the charges share the cores, and the charges still catch up: the limit
// shrinks as the sampling nears its end, so that little is left to charge
// on one core after the last window is sampled.
func backlogLimit(left, batch int) int {
	return max(backlogSlack, (left+batch-1)/batch/8)
}

// prepared is a window sampled by Stream's producer, or its error.
type prepared struct {
	w   *window
	err error
}

// produce samples the windows of users (batch users each) in order into
// out, which holds the backlog the charges have not taken yet (at most its
// capacity: sampling waits when it is full, so memory stays bounded). It
// keeps ahead windows in flight with per workers each, but one with one
// worker until prepDone is closed (the store's recording keeps a core),
// and one while the backlog holds backlogLimit windows or more: the
// charges, one transaction at a time, are then what the release waits
// for, and two samplers beside a long backlog slowed them down and left it
// to charge on one core at the end. taken wakes it when the charges take
// a window. A window is lean (window.lean) when it will wait: while the
// store records and while a backlog is waiting. It closes out when every
// window is sampled, after an error (sent as the last item) or when ctx is
// done, always after every window it started has stopped.
func (r *Recommender) produce(ctx context.Context, c call, users []int32, k, batch, ahead, per int, prepDone <-chan struct{}, out chan<- prepared, taken <-chan struct{}) {
	defer close(out)
	var queue []chan prepared // windows in flight, in order
	defer func() {
		for _, ch := range queue {
			<-ch
		}
	}()
	next := 0
	for {
		preparing := true
		select {
		case <-prepDone:
			preparing = false
		default:
		}
		limit, nw := ahead, per
		switch {
		case preparing:
			limit, nw = 1, 1
		case len(out) >= backlogLimit(len(users)-next, batch):
			limit = 1
		}
		for len(queue) < limit && next < len(users) {
			lo, lean := next, preparing || len(out) > 0
			ch := make(chan prepared, 1)
			go func() {
				w, err := r.prepare(ctx, c, users[lo:min(lo+batch, len(users))], k, nw, lean)
				ch <- prepared{w, err}
			}()
			queue = append(queue, ch)
			next += batch
		}
		if len(queue) == 0 && next >= len(users) {
			return
		}
		var first chan prepared // nil (never ready) when nothing is in flight
		if len(queue) > 0 {
			first = queue[0]
		}
		var raised <-chan struct{} // wakes the loop to raise the limit
		if preparing {
			raised = prepDone
		}
		select {
		case <-taken:
		case p := <-first:
			queue = queue[1:]
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
			if p.err != nil {
				return
			}
		case <-raised:
		case <-ctx.Done():
			return
		}
	}
}

// chargeEmit charges the prepared window w, whose first user is the
// batch's lo-th, and emits its results in order: none unless ctx is still
// live and the charge is committed.
func (r *Recommender) chargeEmit(ctx context.Context, w *window, k, lo int, emit func(i int, res Result) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	res, err := r.commit(ctx, w, k)
	if err != nil {
		return err
	}
	for i := range res {
		if err := emit(lo+i, res[i]); err != nil {
			return err
		}
	}
	return nil
}

// readyWindows is the number of sampled windows a batch of n users may
// keep waiting for their charges (Stream's backlog): about one list in 5,
// at least readyMin windows and at most readyMax (2,097,152 lists). The
// backlog is long only while the store records the influence blocks
// (the first 80 s of the 10 M release, one core's SQL), and the windows
// sampled then are lean (about 0.5 KB a list until charged, where a
// window's releases hold about 2.75 KB). At 10 M, 96 windows filled in
// about 25 s and left a core idle for the next 50 (after the scorer
// stopped running a sensitivity pass beside the recording); 384 filled
// just before the recording's last checkpoint, whose writes (about 1.5 GB)
// then stalled both cores for 5-10 s; 488 keep the sampler busy through
// it (308.6 s against 328.4-336.8 s).
func readyWindows(n, batch int) int {
	return min(readyMax, max(readyMin, n/(5*batch)))
}

var readyMin, readyMax = 24, 512 // variables for tests

// window is one batch of users, looked up and sampled, not yet charged.
type window struct {
	users []int32
	res   []Result
	outs  []Outcome
	todo  []int            // indexes of users that need a fresh list
	recs  []ledger.Release // their releases, in the order of todo
	// lean: recs are built when the window is charged (leanRecs), from
	// outs and idem: a window sampled ahead while the store records the
	// influence blocks then holds the ids of its lists (about 0.2 KB a
	// list) instead of their labels and influence sets (about 1.5 KB).
	lean  bool
	idem  string
	built chan error // a lean window's releases being built (buildRecs)
}

// prepare looks up the re-served lists of a batch of users (unless c is
// fresh) and samples the others in parallel; nothing is charged or returned
// yet.
func (r *Recommender) prepare(ctx context.Context, c call, users []int32, k int, nw int, lean bool) (*window, error) {
	w := &window{users: users, res: make([]Result, len(users)), todo: make([]int, 0, len(users)), lean: lean}
	var prevs map[string]ledger.Release
	if r.store != nil && !c.fresh {
		labels := make([]string, len(users))
		for i, u := range users {
			labels[i] = r.g.Label(u)
		}
		var err error
		// Only the lists are served again: their influence sets are not read.
		if prevs, err = ledger.LatestLists(ctx, r.store, labels, r.modelID, k, r.Provenance()); err != nil {
			return nil, err
		}
	}
	for i, u := range users {
		w.res[i] = Result{User: r.g.Label(u), K: k, Seeded: r.seed != nil}
		if prev, ok := prevs[w.res[i].User]; ok {
			if err := r.checkProvenance(prev); err != nil {
				return nil, err
			}
			w.res[i].List = prev.List
			w.res[i].ReleaseID = prev.ID
			w.res[i].Seeded = prev.Seeded
			w.res[i].Guarantee = r.guaranteeFor(prev.Cost, prev.PartyCost, r.picksOf(prev.Cost), prev.Seeded)
			w.res[i].Notice = "re-served at no cost (post-processing of an earlier release)"
			continue
		}
		w.todo = append(w.todo, i)
	}
	w.outs = make([]Outcome, len(users))
	if !lean {
		w.recs = make([]ledger.Release, len(w.todo))
	}
	idem := c.idem
	if idem == "" && !c.fresh && r.store != nil {
		// Concurrent first requests for the same sticky list (other
		// goroutines, processes or replicas) get one list, charged once.
		// The ledger keeps keys per provenance: a seeded run's sticky key
		// never answers a private request.
		idem = fmt.Sprintf("sticky:%s:k=%d", r.modelID, k)
	}
	w.idem = idem
	// Each user's generator comes from the user (seeded runs) or is the
	// worker's crypto stream, so the lists do not depend on scheduling.
	// The worker also builds the release to charge (its influence set
	// included), on all cores.
	var states []*workerState
	var mu sync.Mutex
	err := par.Run(ctx, len(w.todo), par.Options{Workers: nw}, func(int) *workerState {
		ws := r.state()
		mu.Lock()
		states = append(states, ws)
		mu.Unlock()
		return ws
	}, func(ws *workerState, j int) error {
		i := w.todo[j]
		out, err := r.sample(ws, users[i], k, 0)
		if err != nil {
			return err
		}
		// Sampler buffers are reused: copy the ids out.
		out.IDs = append([]int32(nil), out.IDs...)
		w.outs[i] = out
		if !lean {
			w.recs[j] = r.ledgerRelease(users[i], k, out, idem)
		}
		return nil
	})
	for _, ws := range states {
		r.pool.Put(ws)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// buildRecs starts building the releases of a lean window on all cores,
// as prepare does for the others: the same releases (ledgerRelease is a
// function of the user, k, the outcome and the key). Stream starts it for
// the next window of a backlog while the current one is charged; commit
// waits for it (starting it if nobody has).
func (r *Recommender) buildRecs(ctx context.Context, w *window, k int) {
	if !w.lean || w.built != nil {
		return
	}
	ch := make(chan error, 1)
	w.built = ch
	go func() {
		recs := make([]ledger.Release, len(w.todo))
		err := par.Run(ctx, len(w.todo), par.Options{Chunk: 256}, func(int) struct{} { return struct{}{} }, func(_ struct{}, j int) error {
			i := w.todo[j]
			recs[j] = r.ledgerRelease(w.users[i], k, w.outs[i], w.idem)
			return nil
		})
		w.recs = recs // read after the receive from ch
		ch <- err
	}()
}

// commit charges a prepared window in one transaction and fills in its
// results; only then may they be returned.
func (r *Recommender) commit(ctx context.Context, w *window, k int) ([]Result, error) {
	if w.lean {
		r.buildRecs(ctx, w, k)
		if err := <-w.built; err != nil {
			return nil, err
		}
	}
	res, outs, todo, recs := w.res, w.outs, w.todo, w.recs
	if r.store != nil && len(recs) > 0 {
		cr, err := r.store.ChargeBatch(ctx, recs, r.cap)
		if err != nil {
			return nil, err
		}
		for j, i := range todo {
			c := cr[j]
			if c.Err != nil {
				if errors.Is(c.Err, ledger.ErrBudgetExhausted) {
					res[i].Err = c.Err
					res[i].Notice = c.Err.Error()
					continue
				}
				return nil, c.Err
			}
			if err := r.checkProvenance(c.Release); err != nil {
				return nil, err
			}
			res[i].List = c.Release.List
			res[i].ReleaseID = c.Release.ID
			res[i].Fresh = c.Fresh
			res[i].Seeded = c.Release.Seeded
			res[i].Guarantee = r.guaranteeFor(c.Release.Cost, c.Release.PartyCost, r.picksOf(c.Release.Cost), c.Release.Seeded)
			if c.Fresh {
				res[i].Cost = c.Release.Cost
			} else {
				res[i].Notice = "re-served at no cost (released before under the same key)"
			}
			res[i].Candidates, res[i].Delta = outs[i].Candidates, outs[i].Delta
			r.notice(&res[i], outs[i], k)
		}
		return res, nil
	}
	for j, i := range todo {
		res[i].List = recs[j].List
		res[i].Fresh = true
		res[i].Cost = recs[j].Cost
		res[i].Seeded = recs[j].Seeded
		res[i].Guarantee = r.guaranteeFor(recs[j].Cost, recs[j].PartyCost, outs[i].Picks, recs[j].Seeded)
		res[i].Candidates, res[i].Delta = outs[i].Candidates, outs[i].Delta
		r.notice(&res[i], outs[i], k)
	}
	return res, nil
}

// checkProvenance refuses a stored release whose provenance is not r's: the
// store answered a lookup or an idempotency key across provenances, which
// the ledger contract rules out. Nothing of the window is returned then.
func (r *Recommender) checkProvenance(rel ledger.Release) error {
	if rel.Provenance() != r.Provenance() {
		return fmt.Errorf("release: the store returned %s release %d of user %q to a %s request: refusing to serve it (a ledger.Store must keep provenances apart)",
			rel.Provenance(), rel.ID, rel.User, r.Provenance())
	}
	return nil
}

func (r *Recommender) notice(res *Result, out Outcome, k int) {
	if len(out.IDs) < k && res.Fresh {
		res.Notice = fmt.Sprintf("only %d candidate(s) for K = %d: %d released and charged", len(out.IDs), k, len(out.IDs))
	}
}

// influencePreparer is the optional Store method a large batch calls before
// its first charge (ledger stores have it: ledger.Store's PrepareInfluence).
type influencePreparer interface {
	PrepareInfluence(ctx context.Context, b *ledger.Blocks) error
}

// prepareMin is the number of users from which a batch covering at least
// half of the graph has its store record the influence blocks first.
var prepareMin = 1 << 16 // a variable for tests

// preparesInfluence reports whether a batch of n users has the store
// record the Recommender's influence blocks first: when the batch is
// large, covers at least half the graph, records exposure with blocks (CN,
// AA, RA) and the store can.
func (r *Recommender) preparesInfluence(n int) bool {
	return !r.noExposure && preparesFor(r.store, r.g, r.infl.kind, n)
}

// preparesFor is preparesInfluence without the Recommender: a batch of n
// users of g with score kind k and store st (exposure tracking on).
func preparesFor(st Store, g *graph.Graph, k score.Kind, n int) bool {
	if st == nil || n < prepareMin || 2*n < g.N() {
		return false
	}
	if k != score.CN && k != score.AA && k != score.RA {
		return false
	}
	_, ok := st.(influencePreparer)
	return ok
}

// prepareInfluence asks the store to record the Recommender's influence
// blocks ahead of a batch of n users when preparesInfluence says so.
func (r *Recommender) prepareInfluence(ctx context.Context, n int) error {
	if !r.preparesInfluence(n) {
		return nil
	}
	if err := r.store.(influencePreparer).PrepareInfluence(ctx, r.infl.blockSet()); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
