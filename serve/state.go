package serve

// The served state: loading the files, building the Recommender, reloads,
// users' marks and the atomic swap.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/snapshot"
)

// loadFiles reads the configured graph, marks and node list through the
// one loader (snapshot.Open), and the model.
func (s *Server) loadFiles() (*state, error) {
	d, err := snapshot.Open(snapshot.Source{Graph: s.cfg.GraphPath, Marks: s.cfg.ProtectedPath, Nodes: s.cfg.NodesPath})
	if err != nil {
		return nil, err
	}
	if s.cfg.ProtectedPath == "" {
		switch {
		case d.SyntheticMarks:
			return nil, fmt.Errorf("serve: %s stores synthetic marks (drawn from the graph itself by convert --sigma): a simulation without a guarantee, refused for releases; give --protected FILE", s.cfg.GraphPath)
		case d.Marks == nil:
			return nil, fmt.Errorf("serve: no protection marks: give --protected FILE (only a snapshot that stores marks can do without)")
		}
	}
	g, marks := d.Graph, d.Marks
	if marks == nil { // cannot happen: refused above or read from the file
		if marks, err = protect.New(g.N(), nil); err != nil {
			return nil, err
		}
	}
	m, err := model.Load(s.cfg.ModelPath)
	if err != nil {
		return nil, err
	}
	if _, err := score.ParseKind(m.Score); err != nil {
		return nil, fmt.Errorf("serve: model %s uses score %q: the service serves triad-score models (cn, aa, ra, jc, pa)", s.cfg.ModelPath, m.Score)
	}
	id, err := m.ID()
	if err != nil {
		return nil, err
	}
	st := &state{g: g, dict: release.NewInfluenceDict(g), m: m, modelID: id, fileMarks: marks.Pairs()}
	// A model trained on other data still releases private lists (the
	// noise is calibrated on the served data), but its transform was fit to
	// another graph: say so. Not refused: users' own marks change the
	// marks, so the served data never equals the training data exactly.
	if m.Meta.Data != "" && m.Meta.Data != protect.Fingerprint(g, marks) {
		st.otherData = true
	}
	return st, nil
}

// build completes st (graph, influencer dictionary, model and file marks set) with
// the users' marks um: effective marks, scorer and Recommender. The
// influencer dictionary is st's: a rebuild for new marks on the same graph
// keeps it, and with it the label ids the store has learned.
func (s *Server) build(st *state, um map[string][]string) (*state, error) {
	st = &state{g: st.g, dict: st.dict, m: st.m, modelID: st.modelID, fileMarks: st.fileMarks, userMarks: um, loaded: time.Now().UTC(),
		otherData: st.otherData}
	pairs := append([]graph.Edge(nil), st.fileMarks...)
	for u, xs := range um {
		uid, ok := st.g.ID(u)
		if !ok {
			st.skipped = append(st.skipped, u)
			continue
		}
		for _, x := range xs {
			xid, ok := st.g.ID(x)
			if !ok || xid == uid {
				st.skipped = append(st.skipped, u+" -> "+x)
				continue
			}
			pairs = append(pairs, graph.Edge{U: uid, V: xid})
		}
	}
	var err error
	if st.prot, err = protect.New(st.g.N(), pairs); err != nil {
		return nil, err
	}
	k, _ := score.ParseKind(st.m.Score)
	if st.sc, err = score.New(st.g, st.prot, k); err != nil {
		return nil, err
	}
	if st.rec, err = release.New(st.m, st.g, st.prot, release.WithStore(s.charger), release.WithCap(s.cap),
		release.WithScorer(st.sc), release.WithInfluenceDict(st.dict)); err != nil {
		return nil, err
	}
	if st.rec.Seeded() { // cannot happen: no seed option exists here
		return nil, errors.New("serve: refusing a seeded Recommender")
	}
	return st, nil
}

// callOptions are the per-call options of a list request: none for a
// sticky GET; Fresh for a POST, charging under the client's idempotency
// key when one is given (prefixed so that it cannot collide with the
// release package's own sticky keys).
func callOptions(fresh bool, idemKey string) []release.CallOption {
	if !fresh {
		return nil
	}
	if idemKey == "" {
		return []release.CallOption{release.Fresh()}
	}
	return []release.CallOption{release.Fresh(), release.IdempotencyKey("client:" + idemKey)}
}

// reload re-reads the files and the store's marks and swaps the state in.
func (s *Server) reload(ctx context.Context, reason string) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	t0 := time.Now()
	base, err := s.loadFiles()
	if err == nil {
		var um map[string][]string
		if um, err = s.store.Marks(ctx); err == nil {
			base, err = s.build(base, um)
		}
	}
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return fmt.Errorf("serve: load: %w", err)
	}
	if base.otherData {
		s.log.Warn("the model was trained on other data: its recorded data fingerprint differs from the served graph and marks; lists stay private (the noise is calibrated on the served data) but may be less accurate; retrain on the served data",
			"model", base.modelID)
	}
	s.swap(base, reason, t0)
	return nil
}

// rebuildMarks rebuilds the current state with the store's current marks
// (unless force is false and they did not change).
func (s *Server) rebuildMarks(ctx context.Context, reason string, force bool) error {
	s.rebuildMu.Lock()
	defer s.rebuildMu.Unlock()
	t0 := time.Now()
	cur := s.state.Load()
	um, err := s.store.Marks(ctx)
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return err
	}
	if !force && marksEqual(um, cur.userMarks) {
		return nil
	}
	st, err := s.build(cur, um)
	if err != nil {
		s.met.reloads.WithLabelValues(reason, "error").Inc()
		return err
	}
	s.swap(st, reason, t0)
	return nil
}

// applyMarks returns once a state built from marks read after the call
// began is being served. Concurrent callers share rebuilds: while one runs,
// the callers that arrive wait for the next, which covers all of them, so a
// burst of PUTs costs at most two rebuilds at a time, not one each.
func (s *Server) applyMarks(ctx context.Context) error {
	s.rbMu.Lock()
	defer s.rbMu.Unlock()
	s.rbWant++
	my := s.rbWant
	for s.rbDone < my {
		if s.rbRunning {
			s.rbCond.Wait()
			continue
		}
		s.rbRunning = true
		target := s.rbWant // every request registered so far: their marks are stored
		s.rbMu.Unlock()
		err := s.rebuildMarks(ctx, "marks", true)
		s.rbMu.Lock()
		s.rbRunning = false
		if err == nil {
			s.rbDone = max(s.rbDone, target)
		}
		s.rbCond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

func marksEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	return reflect.DeepEqual(a, b)
}

func (s *Server) swap(st *state, reason string, t0 time.Time) {
	s.state.Store(st)
	s.met.reloads.WithLabelValues(reason, "ok").Inc()
	s.log.Info("serving state loaded", "reason", reason, "nodes", st.g.N(), "edges", st.g.M(),
		"protected_pairs", st.prot.Len(), "file_pairs", len(st.fileMarks), "users_with_marks", len(st.userMarks),
		"model", st.modelID, "variant", st.m.Variant, "unit", st.m.PrivacyUnit().String(), "eps_p", st.m.EpsP, "score", st.m.Score, "seconds", time.Since(t0).Seconds())
	if len(st.skipped) > 0 {
		s.log.Warn("stored marks not applicable to this graph were skipped", "count", len(st.skipped))
	}
}

func (s *Server) refreshLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every+10*time.Second)
			if err := s.rebuildMarks(ctx, "refresh", false); err != nil {
				s.log.Error("marks refresh failed", "err", err)
			}
			cancel()
		}
	}
}
