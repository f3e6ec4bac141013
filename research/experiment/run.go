package experiment

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

// hooks are the expensive calls of a run; tests replace them to count work.
type hooks struct {
	load func(path string) (*graph.Graph, error)
	// fit builds a predictor's scorer on g with marks p.
	fit func(ctx context.Context, spec predict.Spec, g *graph.Graph, p *protect.Set, opt predict.Options) (*score.Scorer, error)
	// eval releases and scores the split's lists; sc scores split.Test.
	eval func(s *protocol.Split, sc *score.Scorer, cfg calib.Config, k int, seed uint64) (evaluate.Result, error)
	// train trains a DPLP-family transform; sc scores split.Train.
	train func(s *protocol.Split, sc *score.Scorer, name, variant string, eps float64, opt evaluate.TrainOptions, seed uint64) (calib.Transform, evaluate.TrainSummary, error)
}

func defaultHooks() hooks {
	return hooks{
		load: func(path string) (*graph.Graph, error) {
			g, _, err := graph.ReadFile(path)
			return g, err
		},
		fit: func(ctx context.Context, spec predict.Spec, g *graph.Graph, p *protect.Set, opt predict.Options) (*score.Scorer, error) {
			return spec.Fit(ctx, g, p, opt)
		},
		eval: evaluate.RunScorer,
		train: func(s *protocol.Split, sc *score.Scorer, name, variant string, eps float64, opt evaluate.TrainOptions, seed uint64) (calib.Transform, evaluate.TrainSummary, error) {
			m, sum, err := evaluate.TrainModelFrom(s, sc, name, variant, eps, opt, seed)
			if err != nil {
				return nil, sum, err
			}
			return m, sum, nil
		},
	}
}

// Run runs the experiment cfg and writes its outputs to the directory out:
// results.json, results.csv, summary.md, plots/ (PNG and SVG) and cache/
// (one file per finished cell; a rerun skips them, so an interrupted run
// resumes). log receives progress lines (nil: discarded). Cancelling ctx stops
// the run between cells. With cfg.Theory set, the outputs are theory.json,
// theory.csv, summary.md (tables and a machine-generated verdict) and
// plots/ instead (see TheoryConfig).
func Run(ctx context.Context, cfg Config, out string, log io.Writer) error {
	return RunWith(ctx, cfg, out, Options{Log: log})
}

// Tracker follows one long stage of a run: Add(n) as n more units finish,
// Finish at the end (the command line draws a progress bar with it).
type Tracker interface {
	Add(n int)
	Finish()
}

// Options are how a run reports: Log receives progress lines (nil:
// discarded); Progress, when set, starts a Tracker for each stage of total
// units (label "experiment" or "theory"), and per-cell detail lines are then
// left out of Log so they do not tear a bar drawn on the same terminal
// (start and end lines always print). The research harness never draws
// anything itself.
type Options struct {
	Log      io.Writer
	Progress func(label string, total int) Tracker
}

// RunWith is Run with reporting options.
func RunWith(ctx context.Context, cfg Config, out string, o Options) error {
	return run(ctx, cfg, out, o.Log, defaultHooks(), o.Progress)
}

// noTracker is the Tracker of runs without Options.Progress.
type noTracker struct{}

func (noTracker) Add(int) {}
func (noTracker) Finish() {}

// startTracker starts a stage's tracker.
func startTracker(start func(string, int) Tracker, label string, total int) Tracker {
	if start == nil {
		return noTracker{}
	}
	if t := start(label, total); t != nil {
		return t
	}
	return noTracker{}
}

// unit is a unit of work: one evaluation shared by every cell with its key.
type unit struct {
	c    cell // a representative cell
	key  cellKey
	hash string
	res  *Result
}

// logger serialises log lines from concurrent cells. While a progress bar
// is drawn (stderr is a terminal), routine per-cell lines (detail) are
// dropped so they do not tear the bar; start and end lines always print.
type logger struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
	track func(string, int) Tracker // Options.Progress
}

func (l *logger) printf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", a...)
}

func (l *logger) detail(format string, a ...any) {
	if !l.quiet {
		l.printf(format, a...)
	}
}

func run(ctx context.Context, cfg Config, out string, logw io.Writer, h hooks, track ...func(string, int) Tracker) error {
	if out == "" {
		return errors.New("experiment: no output directory given")
	}
	if logw == nil {
		logw = io.Discard
	}
	var start func(string, int) Tracker
	if len(track) > 0 {
		start = track[0]
	}
	lg := &logger{w: logw, quiet: start != nil, track: start}
	p, err := cfg.parse(true)
	if err != nil {
		return err
	}
	if cfg.Theory != nil {
		return runTheory(ctx, *cfg.Theory, out, lg)
	}
	if err := os.MkdirAll(filepath.Join(out, "cache"), 0o755); err != nil {
		return err
	}
	cells, skipped := p.expand()
	if len(cells) == 0 {
		return errors.New("experiment: no cell to run: the reference calibration needs the reference protocol")
	}
	shas := make([]string, len(p.datasets))
	for i, g := range cfg.Graphs {
		if shas[i], err = fileSHA256(g); err != nil {
			return err
		}
	}
	p.fileSHA = map[string]string{}
	for _, pr := range p.preds {
		if f := pr.spec.File; f != "" {
			if p.fileSHA[f], err = fileSHA256(f); err != nil {
				return err
			}
		}
	}

	// Units of work, and the unit of every cell.
	byHash := map[string]*unit{}
	var units []*unit
	unitOf := make([]*unit, len(cells))
	for i, c := range cells {
		k := p.key(c, shas[c.ds])
		hs := hashKey(k)
		u, ok := byHash[hs]
		if !ok {
			u = &unit{c: c, key: k, hash: hs}
			byHash[hs] = u
			units = append(units, u)
		}
		unitOf[i] = u
	}
	var todo []*unit
	for _, u := range units {
		var r Result
		if readCache(cachePath(out, u.hash), u.key, &r) {
			u.res = &r
		} else {
			todo = append(todo, u)
		}
	}
	lg.printf("experiment: %d cells, %d distinct evaluations, %d cached, %d to run; output in %s",
		len(cells), len(units), len(units)-len(todo), len(todo), out)
	if skipped > 0 {
		lg.printf("experiment: skipped %d cells pairing the reference calibration with a non-reference protocol", skipped)
	}

	// Group the work by split: (dataset, protocol, sigma, seed).
	methodIdx := map[string]int{}
	for i, m := range p.methods {
		methodIdx[m.name] = i
	}
	predIdx := map[string]int{}
	for i, pr := range p.preds {
		predIdx[pr.name] = i
	}
	slices.SortStableFunc(todo, func(a, b *unit) int {
		x, y := a.c, b.c
		return cmp.Or(cmp.Compare(x.ds, y.ds), cmp.Compare(x.prot, y.prot), cmp.Compare(x.sigma, y.sigma),
			cmp.Compare(x.seed, y.seed), cmp.Compare(predIdx[x.pred.name], predIdx[y.pred.name]), cmp.Compare(methodIdx[x.method.name], methodIdx[y.method.name]),
			cmp.Compare(x.cal, y.cal), cmp.Compare(x.unit, y.unit), cmp.Compare(x.eps, y.eps), cmp.Compare(x.budget, y.budget), cmp.Compare(x.k, y.k))
	})
	bar := startTracker(lg.track, "experiment", len(todo))
	r := &runner{p: p, h: h, out: out, lg: lg, bar: bar, total: len(todo)}
	var g *graph.Graph
	gds := -1
	for start := 0; start < len(todo); {
		c0 := todo[start].c
		end := start + 1
		for end < len(todo) {
			c := todo[end].c
			if c.ds != c0.ds || c.prot != c0.prot || c.sigma != c0.sigma || c.seed != c0.seed {
				break
			}
			end++
		}
		if err := ctx.Err(); err != nil {
			bar.Finish()
			return r.interrupted(err)
		}
		if c0.ds != gds {
			g = nil // let the previous graph go before loading the next
			t0 := time.Now()
			if g, err = h.load(cfg.Graphs[c0.ds]); err != nil {
				bar.Finish()
				return fmt.Errorf("experiment: %s: %w", cfg.Graphs[c0.ds], err)
			}
			gds = c0.ds
			lg.detail("experiment: loaded %s (%d nodes, %d edges) in %.1fs", p.datasets[c0.ds], g.N(), g.M(), time.Since(t0).Seconds())
		}
		t0 := time.Now()
		pc := protocol.Config{Kind: c0.prot, Sigma: c0.sigma, NonEdgeFrac: cfg.NonEdgeFrac, MaxNegatives: cfg.MaxNegatives}
		split, err := protocol.Build(g, pc, randx.Derive(uint64(c0.seed), streamSplit, uint64(c0.prot)))
		if err != nil {
			bar.Finish()
			return fmt.Errorf("experiment: %s, %s protocol, sigma %v, seed %d: %w", p.datasets[c0.ds], c0.prot, c0.sigma, c0.seed, err)
		}
		lg.detail("experiment: split %s/%s/sigma=%v/seed=%d: %d queries, %d protected pairs (%.1fs)",
			p.datasets[c0.ds], c0.prot, c0.sigma, c0.seed, len(split.Queries), split.Stats.Protected, time.Since(t0).Seconds())
		if err := r.group(ctx, split, todo[start:end]); err != nil {
			bar.Finish()
			if ctx.Err() != nil {
				return r.interrupted(ctx.Err())
			}
			return err
		}
		start = end
	}
	bar.Finish()

	rows := make([]Row, len(cells))
	for i, c := range cells {
		rows[i] = p.row(c, unitOf[i].res)
	}
	return writeOutputs(out, p, rows, skipped, lg)
}

// runner evaluates units and caches their results.
type runner struct {
	p     *plan
	h     hooks
	out   string
	lg    *logger
	bar   Tracker
	total int

	mu   sync.Mutex
	done int

	refLin memo[refLinEntry] // the authors' DPLP-Lin, per split, predictor and eps_p (refdplp.go)

	listTrains memo[listTrainEntry] // dplp-list training data, per split, predictor and unit (listmech.go)
	listFits   memo[listFitEntry]   // dplp-list combinations, per split, predictor, unit, eps and k
	listTests  memo[fitEntry]       // dplp-list evidence scorers of test graphs, per split and kind
	listScales memo[listScaleEntry] // mean public score of the evaluation candidates, per split and predictor
}

func (r *runner) interrupted(err error) error {
	return fmt.Errorf("experiment: interrupted after %d of %d evaluations (finished cells are cached; rerun to resume): %w", r.done, r.total, err)
}

// trainEntry memoises one trained transform within a split group.
type trainEntry struct {
	once sync.Once
	tr   calib.Transform
	sum  evaluate.TrainSummary
	err  error
}

// fitEntry memoises one fitted predictor within a split group.
type fitEntry struct {
	once sync.Once
	sc   *score.Scorer
	err  error
}

// memo is a map of lazily computed entries, each computed once.
type memo[E any] struct {
	mu sync.Mutex
	m  map[string]*E
}

func (m *memo[E]) get(key string) *E {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]*E{}
	}
	e, ok := m.m[key]
	if !ok {
		e = new(E)
		m.m[key] = e
	}
	return e
}

// Roles of a fitted predictor: the test graph with the split's marks
// (evaluation), or the public training graph with its marks (training).
const (
	roleTest  = "test"
	roleTrain = "train"
)

// group evaluates the units sharing one split, Workers at a time. Each
// predictor is fitted at most once per role, and each transform trained
// at most once, however many cells use them.
func (r *runner) group(ctx context.Context, split *protocol.Split, us []*unit) error {
	var fits memo[fitEntry]
	scorer := func(c cell, role string) (*score.Scorer, error) {
		e := fits.get(role + "\x00" + c.pred.name)
		e.once.Do(func() {
			g, pm := split.Test, split.Prot
			if role == roleTrain {
				g, pm = split.Train, split.TrainProt
			}
			opt := r.p.popt
			// Embedding seeds derive from the cell's seed; sigma is left out,
			// as for splits, so sigma sweeps share random draws.
			opt.Seed = derivedSeed("fit", role, r.p.datasets[c.ds], c.pred.name, c.prot, c.seed)
			t0 := time.Now()
			e.sc, e.err = r.h.fit(ctx, c.pred.spec, g, pm, opt)
			if e.err == nil && e.sc == nil {
				e.err = errors.New("no scorer returned")
			}
			if e.err == nil && e.sc.Graph() != g {
				e.err = errors.New("the scorer scores another graph")
			}
			if e.err != nil {
				e.err = fmt.Errorf("experiment: fitting %s on the %s graph of %s (%s, sigma %v, seed %d): %w",
					c.pred.name, role, r.p.datasets[c.ds], c.prot, c.sigma, c.seed, e.err)
				return
			}
			if !c.pred.spec.Triad {
				r.lg.detail("experiment: fitted %s on the %s graph of %s/%s/sigma=%v/seed=%d in %.1fs",
					c.pred.display(), role, r.p.datasets[c.ds], c.prot, c.sigma, c.seed, time.Since(t0).Seconds())
			}
		})
		return e.sc, e.err
	}
	var trains memo[trainEntry]
	transform := func(c cell) (*trainEntry, error) {
		e := trains.get(fmt.Sprint(c.pred.name, "\x00", c.method.variant, c.eps, c.cal))
		e.once.Do(func() {
			// DPLP's transform is trained on the public training graph only
			// (privacy-model §5): its scorer is fitted there.
			sc, err := scorer(c, roleTrain)
			if err != nil {
				e.err = err
				return
			}
			opt := evaluate.TrainOptions{Epochs: r.p.cfg.Epochs, Reference: c.cal == calib.Reference, Context: ctx}
			seed := derivedSeed("train", r.p.datasets[c.ds], c.pred.name, c.method.variant, c.prot, c.sigma, c.eps, c.cal, c.seed)
			t0 := time.Now()
			e.tr, e.sum, e.err = r.h.train(split, sc, c.pred.name, c.method.variant, c.eps, opt, seed)
			if e.err == nil && e.tr == nil {
				e.err = errors.New("trainer returned no transform")
			}
			if e.err != nil {
				e.err = fmt.Errorf("experiment: training %s on %s (%s, %s, eps %v, sigma %v, seed %d): %w",
					c.method.name, r.p.datasets[c.ds], c.pred.name, c.prot, c.eps, c.sigma, c.seed, e.err)
				return
			}
			if e.sum.Seconds == 0 {
				e.sum.Seconds = time.Since(t0).Seconds()
			}
			r.lg.detail("experiment: trained %s %s %s eps=%v: %d epochs (best %d), held-out AUC %.3f, %.1fs",
				r.p.datasets[c.ds], c.pred.display(), c.method.name, c.eps, e.sum.Epochs, e.sum.BestEpoch, e.sum.HeldOutAUC, e.sum.Seconds)
		})
		return e, e.err
	}

	workers := r.p.cfg.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	err := par.Run(ctx, len(us), par.Options{Workers: workers}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
		return r.one(ctx, split, us[i], scorer, transform)
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

// one evaluates a unit, caches its result and reports progress.
func (r *runner) one(ctx context.Context, split *protocol.Split, u *unit, scorer func(cell, string) (*score.Scorer, error),
	transform func(cell) (*trainEntry, error)) error {
	c := u.c
	// Kind is score.Bounded for embeddings and files: the reference
	// calibration's Delta is then 1, with noise only when a(u) > 0 (the
	// authors' sign(a) for deep scores).
	if c.method.list != "" {
		return r.oneList(ctx, split, u, scorer)
	}
	cfg := calib.Config{Method: c.method.mech, Calibration: c.cal, Kind: c.pred.spec.Kind, Eps: c.eps, Unit: c.unit}
	var res Result
	switch {
	case c.method.epsFree():
		cfg.Calibration, cfg.Eps = calib.Rigorous, 0
	case c.method.power > 0:
		cfg.Calibration, cfg.Transform = calib.Rigorous, powerTransform{c.method.power}
	case c.method.trained():
		if m, ok := refMethod(c); ok {
			// dplp, dplp-lin and dplp-umnn under the reference calibration:
			// the authors' training and noise (refdplp.go), NO guarantee.
			return r.oneReference(ctx, split, u, m, scorer)
		}
		e, err := transform(c)
		if err != nil {
			return err
		}
		// The reference calibration has no transform: release the trained
		// transform with its exact, rigorous Delta_f.
		cfg.Calibration, cfg.Transform = calib.Rigorous, e.tr
		res.TrainSeconds = e.sum.Seconds
		res.HeldOutAUC = finitePtr(e.sum.HeldOutAUC)
	}
	sc, err := scorer(c, roleTest)
	if err != nil {
		return err
	}
	t0 := time.Now()
	er, err := r.h.eval(split, sc, cfg, c.k, derivedSeed("eval", u.hash))
	if err != nil {
		return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
	}
	res.Seconds = time.Since(t0).Seconds()
	res.TopK, res.Queries, res.ZeroNoise = er.Mean, er.Queries, er.ZeroNoise
	res.ROCAUC = finitePtr(er.ROCAUC)
	res.EpsSpent = finitePtr(er.EpsSpent)
	n, err := r.record(u, &res)
	if err != nil {
		return err
	}
	r.lg.detail("[%d/%d] %s: AUC@K %.4f over %d queries (%.2fs)", n, r.total, r.describe(c), er.Mean.AUC, er.Queries, res.Seconds)
	return nil
}

// record checks a unit's result, caches it, counts it done and advances the
// progress bar; it returns the number of units done so far.
func (r *runner) record(u *unit, res *Result) (int, error) {
	m := res.TopK
	for _, x := range []float64{m.AUC, m.Precision, m.Recall, m.NDCG, m.MAP, m.MRR, m.Hits} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("experiment: %s: non-finite metric in %+v", r.describe(u.c), m)
		}
	}
	if err := writeCache(cachePath(r.out, u.hash), u.key, res); err != nil {
		return 0, err
	}
	u.res = res
	r.mu.Lock()
	r.done++
	n := r.done
	r.mu.Unlock()
	r.bar.Add(1)
	return n, nil
}

func (r *runner) describe(c cell) string {
	b := ""
	if c.budget != "" {
		b = " budget=" + c.budget
	}
	if c.method.list != "" {
		b += " unit=" + c.unit.String()
	}
	return fmt.Sprintf("%s %s %s %s/%s eps=%v%s sigma=%v k=%d seed=%d", r.p.datasets[c.ds], c.pred.display(), c.method.name,
		c.prot, c.cal, c.eps, b, c.sigma, c.k, c.seed)
}

func finitePtr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// cacheRecord is a cache file: the key it answers and the result.
type cacheRecord struct {
	Key    json.RawMessage `json:"key"`
	Result json.RawMessage `json:"result"`
}

func cachePath(out, hash string) string { return filepath.Join(out, "cache", hash+".json") }

// readCache loads a cached result for key into res; false when absent,
// unreadable or stored for another key.
func readCache(path string, key, res any) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var rec cacheRecord
	if json.Unmarshal(data, &rec) != nil {
		return false
	}
	want, err := json.Marshal(key)
	if err != nil || !bytes.Equal(want, rec.Key) {
		return false
	}
	return json.Unmarshal(rec.Result, res) == nil
}

// writeCache stores a result atomically (writeBytes: temporary file, sync,
// rename), so an interrupted run never leaves a half-written cell behind.
func writeCache(path string, key, res any) error {
	k, err := json.Marshal(key)
	if err != nil {
		return err
	}
	v, err := json.Marshal(res)
	if err != nil {
		return err
	}
	data, err := json.Marshal(cacheRecord{Key: k, Result: v})
	if err != nil {
		return err
	}
	return writeBytes(path, data)
}
