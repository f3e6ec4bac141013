package experiment

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/research/protocol"
)

// CodeVersion is part of every cache key: bump it whenever a change to this
// package or to what it calls changes results, so stale cells are recomputed.
const CodeVersion = "experiment-v5"

// predictor is a parsed base predictor of Config.Scores.
type predictor struct {
	name string // predict.Spec.Name: results.json's "score" ("aa", "node2vec", "file:PATH")
	spec predict.Spec
}

// display is the name shown in tables and plot titles: upper case for the
// triad scores ("AA"), the method for embeddings, file:BASE for files.
func (p predictor) display() string {
	switch {
	case p.spec.Triad:
		return strings.ToUpper(p.name)
	case p.spec.File != "":
		return "file:" + filepath.Base(p.spec.File)
	}
	return p.name
}

// slug is the name used in plot file names: display in lower case with
// characters other than letters, digits, '.', '-' and '_' replaced by '_'.
func (p predictor) slug() string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, strings.ToLower(p.display()))
}

// cell is one (dataset, predictor, method, calibration, protocol, eps,
// sigma, k, seed) combination: one row of results.json.
type cell struct {
	ds     int
	pred   predictor
	method methodSpec
	cal    calib.Calibration
	prot   protocol.Kind
	unit   privunit.Unit
	eps    float64
	budget string // canonical Budget; "" when eps was given directly
	sigma  float64
	k      int
	seed   int
}

// cellKey is the canonical configuration of a unit of work. Cells whose
// results cannot differ share a key: eps_p and the calibration are dropped
// for nonprivate and public-only, the calibration for power:A (always
// rigorous), and the epochs for untrained methods.
type cellKey struct {
	Version      string  `json:"version"`
	Dataset      string  `json:"dataset"`
	GraphSHA     string  `json:"graph_sha256"`
	Score        string  `json:"score"`
	Method       string  `json:"method"`
	Calibration  string  `json:"calibration"`
	Protocol     string  `json:"protocol"`
	Eps          float64 `json:"eps"`
	Budget       string  `json:"budget,omitempty"`
	Sigma        float64 `json:"sigma"`
	K            int     `json:"k"`
	Seed         int     `json:"seed"`
	Epochs       int     `json:"epochs"`
	NonEdgeFrac  float64 `json:"non_edge_frac"`
	MaxNegatives int     `json:"max_negatives"`
	// Predictor holds the options that change a fitted predictor's scores
	// (nil for the triad scores, which have none).
	Predictor *predictorKey `json:"predictor,omitempty"`
	// Unit is the privacy unit of the list-level methods ("" for every
	// other method, whose results do not depend on it and whose keys it
	// leaves unchanged).
	Unit string `json:"unit,omitempty"`
	// ListVersion versions the list-level cells ("" for the others).
	ListVersion string `json:"list_version,omitempty"`
	// RefNoise versions the cells released with the authors' DPLP noise
	// (refMethod; "" for every other cell, whose key it leaves unchanged).
	RefNoise string `json:"ref_noise,omitempty"`
}

// predictorKey is the canonical form of the predictor options that matter
// to one predictor; zero fields are defaults.
type predictorKey struct {
	Feature string  `json:"feature,omitempty"`
	Dim     int     `json:"dim,omitempty"`
	Epochs  int     `json:"epochs,omitempty"`
	P       float64 `json:"p,omitempty"`
	Q       float64 `json:"q,omitempty"`
	Lo      float64 `json:"lo,omitempty"`
	Hi      float64 `json:"hi,omitempty"`
	FileSHA string  `json:"file_sha256,omitempty"`
}

// predKey is the cache-relevant configuration of a predictor (nil for
// triads): the classifier feature and dimension for embeddings, epochs for
// gcn and prune, p and q for node2vec, the range and content hash for files.
func (p *plan) predKey(pr predictor) *predictorKey {
	s, o := pr.spec, p.popt
	switch {
	case s.Triad:
		return nil
	case s.File != "":
		lo, hi := o.Lo, o.Hi
		if !(hi > lo) {
			lo, hi = 0, 1
		}
		return &predictorKey{Lo: lo, Hi: hi, FileSHA: p.fileSHA[s.File]}
	}
	k := &predictorKey{Feature: o.Feature.String(), Dim: o.Dim}
	switch s.Method {
	case "gcn", "prune":
		k.Epochs = o.Epochs
	case "node2vec":
		k.P, k.Q = o.P, o.Q
	}
	return k
}

// hash is the cache file name of the key: sha256 of its canonical JSON.
func hashKey(key any) string {
	b, err := json.Marshal(key)
	if err != nil {
		panic(err) // plain structs of strings and numbers always marshal
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// derivedSeed maps a description to a 64-bit seed, so every random stream
// of a run is a deterministic function of what it is for.
func derivedSeed(parts ...any) uint64 {
	h := sha256.Sum256([]byte(fmt.Sprint(parts...)))
	return binary.LittleEndian.Uint64(h[:8])
}

// axis is the eps axis: the budgets when given (eps_p derived per K),
// otherwise the eps values (budget "").
type axisEntry struct {
	eps    float64
	budget *Budget
}

func (p *plan) axis() []axisEntry {
	if len(p.budgets) > 0 {
		out := make([]axisEntry, len(p.budgets))
		for i := range p.budgets {
			out[i] = axisEntry{budget: &p.budgets[i]}
		}
		return out
	}
	out := make([]axisEntry, len(p.cfg.Eps))
	for i, e := range p.cfg.Eps {
		out[i] = axisEntry{eps: e}
	}
	return out
}

// at is the entry's eps_p and budget string at list length k.
func (a axisEntry) at(k int) (float64, string) {
	if a.budget == nil {
		return a.eps, ""
	}
	e, err := a.budget.EpsPerPick(k)
	if err != nil {
		panic(err) // checked by parse
	}
	return e, a.budget.String()
}

// expand lists the cells in output order (dataset, predictor, method,
// calibration, protocol, unit, eps or budget, sigma, k, seed). The reference calibration
// only exists with the reference protocol (its per-query count a(u) is
// computed there); other combinations with it are skipped and reported, as
// are reference-calibrated per-pick cells under the pair unit.
func (p *plan) expand() (cells []cell, skipped int) {
	c := &p.cfg
	axis := p.axis()
	for ds := range p.datasets {
		for _, pr := range p.preds {
			for _, m := range p.methods {
				for _, cal := range p.cals {
					for _, prot := range p.prots {
						if cal == calib.Reference && prot != protocol.Reference {
							skipped += len(p.units) * len(axis) * len(c.Sigma) * len(c.K) * c.Seeds
							continue
						}
						for _, unit := range p.units {
							if cal == calib.Reference && unit == privunit.Pair && !m.epsFree() {
								// The reference calibration carries no guarantee
								// under any unit; it is reported once, under party.
								skipped += len(axis) * len(c.Sigma) * len(c.K) * c.Seeds
								continue
							}
							for _, a := range axis {
								for _, sigma := range c.Sigma {
									for _, k := range c.K {
										eps, budget := a.at(k)
										for seed := 0; seed < c.Seeds; seed++ {
											cells = append(cells, cell{ds: ds, pred: pr, method: m, cal: cal,
												prot: prot, unit: unit, eps: eps, budget: budget, sigma: sigma, k: k, seed: seed})
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return cells, skipped
}

// key is the canonical configuration of the cell's unit of work.
func (p *plan) key(c cell, graphSHA string) cellKey {
	k := cellKey{
		Version: CodeVersion, Dataset: p.datasets[c.ds], GraphSHA: graphSHA,
		Score: c.pred.name, Method: c.method.name, Calibration: c.cal.String(),
		Protocol: c.prot.String(), Eps: c.eps, Budget: c.budget, Sigma: c.sigma, K: c.k, Seed: c.seed,
		NonEdgeFrac: p.cfg.NonEdgeFrac, MaxNegatives: p.cfg.MaxNegatives,
		Predictor: p.predKey(c.pred),
	}
	switch {
	case c.method.epsFree():
		k.Eps, k.Budget, k.Calibration = 0, "", "-"
	case c.method.power > 0:
		k.Calibration = calib.Rigorous.String()
	}
	if c.method.trained() {
		k.Epochs = p.cfg.Epochs
	}
	if _, ok := refMethod(c); ok {
		k.RefNoise = refNoiseVersion
	}
	if c.method.list == "" && !c.method.epsFree() && c.unit == privunit.Pair {
		// Per-pick methods under the pair unit are calibrated to its
		// per-candidate bound (calib.Config.Unit); party-unit keys are
		// unchanged, so their cached cells stay valid.
		k.Unit = c.unit.String()
	}
	switch c.method.list {
	case "dplp-list":
		k.Unit, k.ListVersion = c.unit.String(), listVersion
	case "dplp-list-gauss":
		k.Unit, k.ListVersion = c.unit.String(), gaussVersion
	case "perturb-once":
		k.Unit, k.ListVersion = c.unit.String(), perturbVersion
	case "joint-em", "oneshot-topk":
		k.Unit, k.ListVersion = c.unit.String(), topkVersion
	}
	return k
}

// fileSHA256 hashes a file's bytes, so a changed graph file invalidates its
// cached cells.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("experiment: reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// streamSplit is the randx stream of splits: one split per (dataset,
// protocol, sigma, seed), drawn from randx.Derive(seed, streamSplit,
// protocol). Sigma is left out on purpose, so splits at different sigma
// share their random draws (common random numbers for sigma sweeps).
const streamSplit = 0x73706c6974 // "split"
