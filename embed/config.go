package embed

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// SkipGramConfig configures skip-gram training with negative sampling
// (word2vec's SGNS). Defaults follow gensim's Word2Vec, which the authors'
// Node2Vec code called: window 10 is the Node2Vec authors' setting.
type SkipGramConfig struct {
	Dim       int     // embedding dimension (paper: 80)
	Window    int     // maximum context distance; each centre draws its window uniformly in [1, Window]
	Negative  int     // negative samples per (centre, context) pair, drawn from unigram^0.75
	Epochs    int     // passes over the walk corpus
	LR        float64 // initial learning rate, decayed linearly to LR*1e-4
	Subsample float64 // word2vec frequent-token downsampling threshold; 0 disables
	// Workers is the number of goroutines for the walks and Struc2Vec's
	// distances (0 means GOMAXPROCS), and for training when Hogwild is set.
	// Walks are identical for any value.
	Workers int
	// Hogwild opts in to lock-free parallel training with Workers
	// goroutines (word2vec's and gensim's way): faster on several cores,
	// but the result depends on thread timing, so equal seeds no longer give
	// equal embeddings. By default (false) training runs on one goroutine
	// over the walks in a fixed order with per-chunk generators, and the
	// embedding is a deterministic function of the seed, for any Workers
	// and GOMAXPROCS. Builds with -race always train with one worker,
	// because Hogwild updates are deliberate data races.
	Hogwild bool
}

// DefaultSkipGram returns dimension 80, window 10, 5 negatives, one epoch,
// learning rate 0.025 and downsampling threshold 1e-3 (gensim defaults).
func DefaultSkipGram() SkipGramConfig {
	return SkipGramConfig{Dim: 80, Window: 10, Negative: 5, Epochs: 1, LR: 0.025, Subsample: 1e-3}
}

func (c SkipGramConfig) validate() error {
	switch {
	case c.Dim < 1:
		return fmt.Errorf("embed: dimension %d < 1", c.Dim)
	case c.Window < 1:
		return fmt.Errorf("embed: window %d < 1", c.Window)
	case c.Negative < 0:
		return fmt.Errorf("embed: negative samples %d < 0", c.Negative)
	case c.Epochs < 1:
		return fmt.Errorf("embed: epochs %d < 1", c.Epochs)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("embed: learning rate %v must be positive and finite", c.LR)
	case !(c.Subsample >= 0) || math.IsInf(c.Subsample, 0):
		return fmt.Errorf("embed: subsample threshold %v must be >= 0 and finite", c.Subsample)
	case c.Workers < 0:
		return fmt.Errorf("embed: workers %d < 0", c.Workers)
	}
	return nil
}

func (c SkipGramConfig) workers() int { return workerCount(c.Workers) }

func workerCount(w int) int {
	if w <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return w
}

// WalkConfig is the part of a walk-based method's configuration that says how
// many walks to start from every node and how long they are.
type WalkConfig struct {
	WalksPerNode int // walks started at every node (paper: 10)
	WalkLength   int // nodes per walk, including the start (paper: 80; Struc2Vec 10)
}

func (c WalkConfig) validate() error {
	if c.WalksPerNode < 1 {
		return fmt.Errorf("embed: walks per node %d < 1", c.WalksPerNode)
	}
	if c.WalkLength < 1 {
		return fmt.Errorf("embed: walk length %d < 1", c.WalkLength)
	}
	return nil
}

// DeepWalkConfig configures DeepWalk: uniform random walks + skip-gram.
type DeepWalkConfig struct {
	Walk     WalkConfig
	SkipGram SkipGramConfig
}

// DefaultDeepWalk returns the paper's setting: 10 walks of length 80 per
// node, dimension 80, window 10. (The original DeepWalk trained with
// hierarchical softmax; here it shares the SGNS trainer.)
func DefaultDeepWalk() DeepWalkConfig {
	return DeepWalkConfig{Walk: WalkConfig{WalksPerNode: 10, WalkLength: 80}, SkipGram: DefaultSkipGram()}
}

// Node2VecConfig configures Node2Vec: second-order walks + skip-gram.
type Node2VecConfig struct {
	P, Q     float64 // return and in-out parameters; P = Q = 1 gives uniform walks
	Walk     WalkConfig
	SkipGram SkipGramConfig
}

// DefaultNode2Vec returns the paper's setting (10 walks of length 80,
// dimension 80, window 10) with p = q = 1 as in the authors' code.
func DefaultNode2Vec() Node2VecConfig {
	return Node2VecConfig{P: 1, Q: 1, Walk: WalkConfig{WalksPerNode: 10, WalkLength: 80}, SkipGram: DefaultSkipGram()}
}

// Struc2VecConfig configures Struc2Vec.
type Struc2VecConfig struct {
	// Layers is the number of structural layers k = 0..Layers-1, where layer
	// k compares the rings at distances 0..k (paper: 6).
	Layers int
	// StayProb is the probability that a walk step moves inside the current
	// layer rather than changing layer (q in Ribeiro et al.; their code: 0.3).
	StayProb float64
	// Candidates is how many nodes of nearest degree each node is compared
	// with (OPT2); 0 means 2*ceil(log2 n) as in the reference implementation.
	Candidates int
	Walk       WalkConfig
	SkipGram   SkipGramConfig
}

// DefaultStruc2Vec returns the paper's appendix setting (10 walks of length
// 10, 6 layers, dimension 80). The paper leaves the rest at the software's
// defaults; those of the struc2vec reference code are window 10 and 5 epochs.
func DefaultStruc2Vec() Struc2VecConfig {
	sg := DefaultSkipGram()
	sg.Epochs = 5
	return Struc2VecConfig{Layers: 6, StayProb: 0.3, Walk: WalkConfig{WalksPerNode: 10, WalkLength: 10}, SkipGram: sg}
}

var errNilRand = errors.New("embed: nil random source")
