// Package predict is the registry of base link predictors: the triad
// scores of package score, the embedding methods of package embed (each
// followed by a logistic link classifier whose probability is the score),
// and user-supplied score files. Every predictor yields a *score.Scorer, so
// it can be used wherever a triad score can.
package predict

import (
	"context"
	"fmt"
	"strings"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/embed/gcn"
	"github.com/dplp/dplp/embed/line"
	"github.com/dplp/dplp/embed/prune"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/linkclf"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// Embedding names the embedding methods.
var Embedding = []string{"node2vec", "deepwalk", "line", "gcn", "prune", "struc2vec"}

// Options configure the fitted predictors.
type Options struct {
	Seed     uint64
	Feature  linkclf.Feature // edge feature of the link classifier
	Dim      int             // embedding dimension (0: each method's default, 80)
	Epochs   int             // GCN / PRUNE epochs (0: default)
	P, Q     float64         // node2vec return and in-out parameters (0: 1)
	Lo, Hi   float64         // file: declared range (Hi <= Lo means [0, 1])
	Progress func(done, total int)
}

// Spec is a parsed predictor name.
type Spec struct {
	Name   string     // as given (lower case)
	Triad  bool       // one of cn, aa, ra, jc, pa
	Kind   score.Kind // score.Bounded unless Triad
	File   string     // file: path
	Method string     // embedding method
}

// Parse checks a predictor name: cn, aa, ra, jc, pa, node2vec, deepwalk,
// line, gcn, prune, struc2vec or file:PATH.
func Parse(name string) (Spec, error) {
	l := strings.ToLower(strings.TrimSpace(name))
	if k, err := score.ParseKind(l); err == nil {
		return Spec{Name: l, Triad: true, Kind: k}, nil
	}
	if strings.HasPrefix(strings.TrimSpace(name), "file:") {
		p := strings.TrimPrefix(strings.TrimSpace(name), "file:")
		if p == "" {
			return Spec{}, fmt.Errorf("predict: file: needs a path (file:scores.csv)")
		}
		return Spec{Name: "file:" + p, Kind: score.Bounded, File: p}, nil
	}
	for _, m := range Embedding {
		if l == m {
			return Spec{Name: l, Kind: score.Bounded, Method: m}, nil
		}
	}
	return Spec{}, fmt.Errorf("unknown score %q (valid: cn, aa, ra, jc, pa, %s, file:PATH)", name, strings.Join(Embedding, ", "))
}

// Fit builds the predictor's scorer on g with marks p. Triad scores need no
// fitting. Embedding methods are trained on g itself (with a seeded
// generator) and followed by a logistic classifier trained on g's edges
// against as many sampled non-edges; its probability in [0, 1] is the score
// (Delta_s = 1, S_max = 1). A score file is read against g's labels.
// Cancelling ctx stops embedding training (see Embed).
func (s Spec) Fit(ctx context.Context, g *graph.Graph, p *protect.Set, opt Options) (*score.Scorer, error) {
	if s.Triad {
		return score.New(g, p, s.Kind)
	}
	if s.File != "" {
		lo, hi := opt.Lo, opt.Hi
		if !(hi > lo) {
			lo, hi = 0, 1
		}
		fn, err := ReadScores(s.File, g, lo, hi)
		if err != nil {
			return nil, err
		}
		return score.NewBounded(g, p, s.Name, lo, hi, fn)
	}
	emb, err := s.Embed(ctx, g, opt)
	if err != nil {
		return nil, err
	}
	clf, err := linkclf.Train(emb, g, opt.Feature, randx.Derive(opt.Seed, 0x636c66))
	if err != nil {
		return nil, fmt.Errorf("%s link classifier: %w", s.Name, err)
	}
	return score.NewBounded(g, p, s.Name, 0, 1, clf.Prob)
}

// Embed trains the embedding method on g, reporting to opt.Progress.
// Cancelling ctx stops training promptly; Embed then returns ctx.Err().
func (s Spec) Embed(ctx context.Context, g *graph.Graph, opt Options) (*embed.Embedding, error) {
	rng := randx.Derive(opt.Seed, 0x656d62)
	switch s.Method {
	case "node2vec":
		c := embed.DefaultNode2Vec()
		if opt.P > 0 {
			c.P = opt.P
		}
		if opt.Q > 0 {
			c.Q = opt.Q
		}
		if opt.Dim > 0 {
			c.SkipGram.Dim = opt.Dim
		}
		return embed.Node2Vec(ctx, g, c, rng, opt.Progress)
	case "deepwalk":
		c := embed.DefaultDeepWalk()
		if opt.Dim > 0 {
			c.SkipGram.Dim = opt.Dim
		}
		return embed.DeepWalk(ctx, g, c, rng, opt.Progress)
	case "struc2vec":
		c := embed.DefaultStruc2Vec()
		if opt.Dim > 0 {
			c.SkipGram.Dim = opt.Dim
		}
		return embed.Struc2Vec(ctx, g, c, rng, opt.Progress)
	case "line":
		c := line.Defaults()
		if opt.Dim > 0 {
			c.Dim = opt.Dim
		}
		return line.Train(ctx, g, c, rng, opt.Progress)
	case "gcn":
		c := gcn.Defaults()
		if opt.Dim > 0 {
			c.Dim = opt.Dim
		}
		if opt.Epochs > 0 {
			c.Epochs = opt.Epochs
		}
		return gcn.Train(ctx, g, c, rng, opt.Progress)
	case "prune":
		c := prune.Defaults()
		if opt.Dim > 0 {
			c.Dim = opt.Dim
		}
		if opt.Epochs > 0 {
			c.Epochs = opt.Epochs
		}
		return prune.Train(ctx, g, c, rng, opt.Progress)
	}
	return nil, fmt.Errorf("predict: %s is not an embedding method", s.Name)
}
