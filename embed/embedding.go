// Package embed computes unsupervised node embeddings from random walks
// (DeepWalk, Node2Vec, Struc2Vec) trained with skip-gram negative sampling,
// written in Go because no word2vec library is available.
//
// Reproducibility: every method draws one seed from the *rand.Rand it is
// given and derives all further generators from it with randx.Derive, one
// per fixed-size chunk of walks (never per worker). Walks therefore depend
// only on the seed, not on the worker count or GOMAXPROCS. Training runs the
// chunks in a fixed order on one goroutine by default, so embeddings are
// bit-for-bit reproducible for any worker count and GOMAXPROCS (on the same
// architecture: amd64 with AVX2+FMA uses vector kernels whose float32
// rounding differs from the portable ones). SkipGramConfig.Hogwild opts in
// to lock-free parallel training, which is faster on several cores and not
// reproducible.
package embed

// Embedding holds one Dim-dimensional float32 vector per node, row-major:
// the vector of node u is Vec[u*Dim : (u+1)*Dim]. Node ids are graph ids.
type Embedding struct {
	N, Dim int
	Vec    []float32
}

// NewEmbedding returns a zero embedding of n nodes and dimension dim.
func NewEmbedding(n, dim int) *Embedding {
	return &Embedding{N: n, Dim: dim, Vec: make([]float32, n*dim)}
}

// Row returns the vector of node u, aliasing the underlying storage.
func (e *Embedding) Row(u int32) []float32 {
	i := int(u) * e.Dim
	return e.Vec[i : i+e.Dim : i+e.Dim]
}
