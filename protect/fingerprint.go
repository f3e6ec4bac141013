package protect

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/dplp/dplp/graph"
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
	var buf []byte
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	buf = append(buf, "dplp-data-v1\x00"...)
	buf = binary.AppendUvarint(buf, uint64(g.N()))
	for u := 0; u < g.N(); u++ {
		l := g.Label(int32(u))
		buf = binary.AppendUvarint(buf, uint64(len(l)))
		buf = append(buf, l...)
		if len(buf) > 1<<16 {
			flush()
		}
	}
	// Public adjacency, then marks, each list prefixed by its length.
	for u := 0; u < g.N(); u++ {
		nb := g.Neighbors(int32(u))
		pub := 0
		for _, v := range nb {
			if s == nil || !s.Has(int32(u), v) {
				pub++
			}
		}
		buf = binary.AppendUvarint(buf, uint64(pub))
		for _, v := range nb {
			if s == nil || !s.Has(int32(u), v) {
				buf = binary.AppendUvarint(buf, uint64(v))
			}
		}
		if len(buf) > 1<<16 {
			flush()
		}
	}
	if s != nil {
		for w := 0; w < s.N(); w++ {
			m := s.Of(int32(w))
			buf = binary.AppendUvarint(buf, uint64(len(m)))
			for _, x := range m {
				buf = binary.AppendUvarint(buf, uint64(x))
			}
			if len(buf) > 1<<16 {
				flush()
			}
		}
	}
	flush()
	return "v1:" + hex.EncodeToString(h.Sum(nil))
}
