// Package predflags binds the base-predictor flags once, with one set of
// names, defaults and help texts, for every command that takes them and for
// the experiment command's flags (cli/expflags.go), so the defaults cannot
// drift apart. It belongs to the command line: the research harness takes
// plain configuration values (experiment.PredictorOptions) and never
// imports pflag.
package predflags

import "github.com/spf13/pflag"

// Values are the predictor options the flags set.
type Values struct {
	Feature   string  // link-classifier edge feature: hadamard or absdiff
	Dim       int     // embedding dimension (0: the paper's 80)
	Epochs    int     // gcn/prune epochs (0: the paper's)
	P, Q      float64 // node2vec return and in-out parameters
	Lo, Hi    float64 // file:PATH scores: declared range
	EmbedSeed uint64  // seed of the embedding and its classifier
}

// Defaults are the flags' defaults.
func Defaults() Values {
	return Values{Feature: "hadamard", P: 1, Q: 1, Lo: 0, Hi: 1, EmbedSeed: 1}
}

// Register binds the predictor flags to v on fs with Defaults. withSeed
// adds --embed-seed (commands that fit one predictor; experiments derive
// the seed from each cell).
func Register(fs *pflag.FlagSet, v *Values, withSeed bool) {
	d := Defaults()
	fs.StringVar(&v.Feature, "feature", d.Feature, "link-classifier edge feature of embedding scores: hadamard (z_u * z_v, default) or absdiff (|z_u - z_v|, the authors' choice)")
	fs.IntVar(&v.Dim, "dim", d.Dim, "embedding scores: dimension (0: 80, the paper's)")
	fs.IntVar(&v.Epochs, "emb-epochs", d.Epochs, "gcn/prune: training epochs (0: the paper's)")
	fs.Float64Var(&v.P, "n2v-p", d.P, "node2vec: return parameter p")
	fs.Float64Var(&v.Q, "n2v-q", d.Q, "node2vec: in-out parameter q")
	fs.Float64Var(&v.Lo, "lo", d.Lo, "file:PATH scores: lower end of the declared range")
	fs.Float64Var(&v.Hi, "hi", d.Hi, "file:PATH scores: upper end of the declared range")
	if withSeed {
		fs.Uint64Var(&v.EmbedSeed, "embed-seed", d.EmbedSeed, "embedding scores: seed of the embedding and classifier (training is deterministic: equal seeds give equal scores on any number of cores)")
	}
}
