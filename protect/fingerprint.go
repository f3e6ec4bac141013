package protect

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"runtime"
	"strconv"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/internal/sorted"
)

// Fingerprint identifies the invariant data of (g, s): the node labels in
// id order (canonical, so the label set), the public graph (every edge that
// is not protected) and the marks. It is the SHA-256 of a canonical
// encoding, in hex, prefixed "v1:". Two neighbouring graphs (which differ
// only in protected pairs) have the same fingerprint, so recording it in a
// model reveals nothing the model does not already depend on; a release
// compares it with the data it is given to notice a model trained on other
// data. O(labels + edges + marks).
func Fingerprint(g *graph.Graph, s *Set) string {
	h := sha256.New()
	hdr := append([]byte("dplp-data-v1\x00"), binary.AppendUvarint(nil, uint64(g.N()))...)
	h.Write(hdr)
	labels := g.Labels()
	hashChunks(h, g.N(), func(buf []byte, lo, hi int) []byte {
		for u := lo; u < hi; u++ {
			if labels == nil { // decimal ids: the label is the id
				var d [20]byte
				l := strconv.AppendInt(d[:0], int64(u), 10)
				buf = binary.AppendUvarint(buf, uint64(len(l)))
				buf = append(buf, l...)
				continue
			}
			buf = binary.AppendUvarint(buf, uint64(len(labels[u])))
			buf = append(buf, labels[u]...)
		}
		return buf
	})
	// Public adjacency, then marks, each list prefixed by its length.
	hashChunks(h, g.N(), func(buf []byte, lo, hi int) []byte {
		var pub []int32
		for u := lo; u < hi; u++ {
			var pr []int32
			if s != nil && u < s.N() {
				pr = s.Of(int32(u)) // the set is symmetric: {u,v} protected iff v in prot(u)
			}
			pub = sorted.Minus(pub, g.Neighbors(int32(u)), pr)
			buf = binary.AppendUvarint(buf, uint64(len(pub)))
			for _, v := range pub {
				buf = binary.AppendUvarint(buf, uint64(v))
			}
		}
		return buf
	})
	if s != nil {
		hashChunks(h, s.N(), func(buf []byte, lo, hi int) []byte {
			for w := lo; w < hi; w++ {
				m := s.Of(int32(w))
				buf = binary.AppendUvarint(buf, uint64(len(m)))
				for _, x := range m {
					buf = binary.AppendUvarint(buf, uint64(x))
				}
			}
			return buf
		})
	}
	return "v1:" + hex.EncodeToString(h.Sum(nil))
}

// fingerprintChunk is the nodes one encoding task covers.
const fingerprintChunk = 1 << 14

// hashChunks writes to h the encodings of nodes 0..n-1 that enc appends,
// in node order: chunks are encoded on all cores a window at a time and
// hashed in order, so the digest is that of the sequential encoding and the
// memory is a window's encodings.
func hashChunks(h hash.Hash, n int, enc func(buf []byte, lo, hi int) []byte) {
	chunks := (n + fingerprintChunk - 1) / fingerprintChunk
	window := 4 * runtime.GOMAXPROCS(0)
	bufs := make([][]byte, window)
	for c0 := 0; c0 < chunks; c0 += window {
		m := min(window, chunks-c0)
		_ = par.Run(context.Background(), m, par.Options{}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
			lo := (c0 + i) * fingerprintChunk
			bufs[i] = enc(bufs[i][:0], lo, min(n, lo+fingerprintChunk))
			return nil
		})
		for _, b := range bufs[:m] {
			h.Write(b)
		}
	}
}
