package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/embed/alias"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/randx"
)

// trainChunk is the number of walks per training work unit; like walk chunks
// each owns a derived generator and a fixed slice of the learning-rate
// schedule, so a single worker gives the same result for any GOMAXPROCS.
const trainChunk = 32

// SkipGram trains word2vec's skip-gram with negative sampling (Mikolov et
// al. 2013) on walks over nodes 0..n-1 and returns the input vectors.
//
// As in word2vec.c and gensim: input vectors start uniform in
// [-0.5/Dim, 0.5/Dim), output vectors at zero; every centre draws a reduced
// window uniformly in [1, Window]; negatives come from the unigram
// distribution raised to 0.75 (exact alias sampling rather than a rounded
// table); frequent nodes are downsampled with threshold Subsample; the
// learning rate decays linearly from LR to LR*1e-4 over all epochs. Training
// is deterministic SGD over chunks of walks in order, or lock-free Hogwild
// SGD with SkipGramConfig.Hogwild (see there).
// progress (may be nil) is called with processed and total tokens.
// Cancelling ctx stops training between chunks of trainChunk walks; SkipGram
// then returns ctx.Err() and no embedding.
func SkipGram(ctx context.Context, n int, walks [][]int32, cfg SkipGramConfig, rng *rand.Rand, progress func(done, total int)) (*Embedding, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errNilRand
	}
	if n < 1 {
		return nil, errors.New("embed: no nodes")
	}
	if n > math.MaxInt32 || n > math.MaxInt/cfg.Dim {
		return nil, fmt.Errorf("embed: %d nodes of dimension %d are too many", n, cfg.Dim)
	}
	tokens := 0
	for _, w := range walks {
		for _, u := range w {
			if u < 0 || int(u) >= n {
				return nil, fmt.Errorf("embed: walk node %d out of range [0,%d)", u, n)
			}
		}
		tokens += len(w)
	}
	pm := newProgress(progress, tokens*cfg.Epochs)
	return trainSkipGram(ctx, n, walks, tokens, cfg, rng.Uint64(), pm)
}

type sgnsModel struct {
	dim    int
	syn0   []float32 // input vectors: the embedding
	syn1   []float32 // output (context) vectors
	neg    *alias.Table
	keep   []float32 // probability of keeping a token of each node (downsampling)
	cfg    SkipGramConfig
	tokens int // corpus size for one epoch
}

// trainSkipGram trains on walks; a cancelled ctx stops it between chunks
// with ctx.Err().
func trainSkipGram(ctx context.Context, n int, walks [][]int32, tokens int, cfg SkipGramConfig, seed uint64, pm *progressMeter) (*Embedding, error) {
	dim := cfg.Dim
	m := &sgnsModel{dim: dim, syn0: make([]float32, n*dim), syn1: make([]float32, n*dim), cfg: cfg, tokens: tokens}
	ir := randx.Derive(seed, streamInit)
	for i := range m.syn0 {
		m.syn0[i] = (ir.Float32() - 0.5) / float32(dim)
	}
	counts := make([]float64, n)
	for _, w := range walks {
		for _, u := range w {
			counts[u]++
		}
	}
	m.keep = make([]float32, n)
	for u, c := range counts {
		m.keep[u] = 1
		if cfg.Subsample > 0 && c > 0 {
			// On small graphs every node is "frequent" at word2vec's
			// threshold; raising it to 1/n keeps hubs from being dropped
			// most of the time (measured: USAir link prediction +0.02).
			th := max(cfg.Subsample, 1/float64(n)) * float64(tokens)
			m.keep[u] = float32(min(1, (math.Sqrt(c/th)+1)*th/c))
		}
	}
	weights := make([]float64, n)
	var wsum float64
	for u, c := range counts {
		weights[u] = math.Pow(c, 0.75)
		wsum += weights[u]
	}
	if tokens == 0 || wsum == 0 || cfg.Negative == 0 {
		cfg.Negative = 0
	} else {
		m.neg = alias.New(weights)
	}
	m.cfg = cfg

	// Token offset of each chunk, for its deterministic part of the schedule.
	chunks := (len(walks) + trainChunk - 1) / trainChunk
	offset := make([]int, chunks+1)
	for c := 0; c < chunks; c++ {
		s := 0
		for _, w := range walks[c*trainChunk : min((c+1)*trainChunk, len(walks))] {
			s += len(w)
		}
		offset[c+1] = offset[c] + s
	}
	workers := 1 // deterministic: chunks in order on one goroutine
	if cfg.Hogwild && !raceEnabled {
		workers = cfg.workers()
	}
	newScratch := func(int) *sgnsScratch {
		return &sgnsScratch{neu1e: make([]float32, dim), negs: make([]int32, cfg.Negative), sen: make([]int32, 0, 128)}
	}
	for ep := 0; ep < cfg.Epochs; ep++ {
		// Chunks own their generators and their slice of the schedule, so
		// only Hogwild's lock-free updates depend on the workers.
		err := par.Run(ctx, chunks, par.Options{Workers: workers}, newScratch, func(s *sgnsScratch, c int) error {
			r := randx.Derive(seed, streamTrain, uint64(ep), uint64(c))
			done := ep*tokens + offset[c]
			s.sen = m.trainChunk(walks[c*trainChunk:min((c+1)*trainChunk, len(walks))], done, r, s.neu1e, s.negs, s.sen)
			pm.add(offset[c+1] - offset[c])
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Cancelled while the last chunks ran (or with no walks at all).
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Embedding{N: n, Dim: dim, Vec: m.syn0}, nil
}

// sgnsScratch is one training worker's scratch.
type sgnsScratch struct {
	neu1e     []float32
	negs, sen []int32
}

// trainChunk runs SGD over a chunk of walks; done is the number of tokens
// scheduled before the chunk, which fixes the learning rate.
func (m *sgnsModel) trainChunk(walks [][]int32, done int, r *rand.Rand, neu1e []float32, negs []int32, sen []int32) []int32 {
	dim := m.dim
	lr0 := float32(m.cfg.LR)
	floor := lr0 * 1e-4
	totalSched := float32(m.cfg.Epochs*m.tokens + 1)
	window := m.cfg.Window
	for _, walk := range walks {
		sen = sen[:0]
		for _, u := range walk {
			if k := m.keep[u]; k >= 1 || r.Float32() < k {
				sen = append(sen, u)
			}
		}
		lr := max(floor, lr0*(1-float32(done)/totalSched))
		done += len(walk)
		for i, centre := range sen {
			b := window - r.IntN(window) // reduced window in [1, window]
			for c := max(0, i-b); c <= min(len(sen)-1, i+b); c++ {
				if c == i {
					continue
				}
				ctx := sen[c]
				for k := range negs {
					negs[k] = int32(m.neg.Sample(r))
				}
				skipGramPair(m.syn0[int(ctx)*dim:int(ctx+1)*dim], m.syn1, dim, centre, negs, neu1e, lr, false)
			}
		}
	}
	return sen
}

// skipGramPair takes one SGD step of size lr on the SGNS loss of one
// (context, centre) pair,
//
//	L = -log σ(in·out[pos]) - Σ_{k: negs[k] != pos} log σ(-in·out[negs[k]]),
//
// where in is the context's input vector and out[j] = syn1[j*dim:(j+1)*dim].
// Like word2vec it updates each output vector as soon as its gradient is
// known and the input vector after all targets (negatives equal to pos are
// skipped). neu1e is scratch of length dim. With wantLoss it returns L at
// the parameters before the step (computing it costs a log per target).
func skipGramPair(in []float32, syn1 []float32, dim int, pos int32, negs []int32, neu1e []float32, lr float32, wantLoss bool) float64 {
	clear(neu1e)
	var loss float64
	loss += sgnsTarget(in, syn1[int(pos)*dim:int(pos+1)*dim], neu1e, 1, lr, wantLoss)
	for _, t := range negs {
		if t == pos {
			continue
		}
		loss += sgnsTarget(in, syn1[int(t)*dim:int(t+1)*dim], neu1e, 0, lr, wantLoss)
	}
	axpy(1, neu1e, in)
	return loss
}

// sgnsTarget handles one target of label 1 (positive) or 0 (negative):
// with f = in·out and loss -log σ(f) or -log σ(-f), dL/df = σ(f) - label, so
// it adds -lr·dL/df·out to gin and -lr·dL/df·in to out.
func sgnsTarget(in, out, gin []float32, label, lr float32, wantLoss bool) float64 {
	f := dot(in, out)
	g := lr * (label - sigmoid(f))
	update2(g, in, out, gin)
	if !wantLoss {
		return 0
	}
	// -log σ(z) = log(1+e^-z), with z = f for positives and -f for negatives.
	z := float64(f)
	if label == 0 {
		z = -z
	}
	if z > 0 {
		return math.Log1p(math.Exp(-z))
	}
	return -z + math.Log1p(math.Exp(z))
}

// The logistic function is tabulated on [-sigMax, sigMax] and linearly
// interpolated (absolute error < 1e-6, far below SGD noise, and small
// enough for gradient checks); outside it is within 1.2e-7 of 0 or 1.
const (
	sigMax   = 16
	sigSteps = 128 // table points per unit (16 KiB table)
)

var sigTable = func() []float32 {
	t := make([]float32, 2*sigMax*sigSteps+2)
	for i := range t {
		x := float64(i)/sigSteps - sigMax
		t[i] = float32(1 / (1 + math.Exp(-x)))
	}
	return t
}()

func sigmoid(f float32) float32 {
	if !(f > -sigMax) { // also catches NaN
		return 0
	}
	if f >= sigMax {
		return 1
	}
	x := (f + sigMax) * sigSteps
	i := int(x)
	fr := x - float32(i)
	t := sigTable[i : i+2 : i+2]
	return t[0] + fr*(t[1]-t[0])
}
