package pipeline

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// The data fingerprint. Models record meta.data = protect.Fingerprint(g,
// marks) of the data they were trained on; `dplp recommend` and `dplp
// serve` compare it with the data they release on and say so when it
// differs (the release is still private: the noise is calibrated on the
// data released on; the transform was fitted to other data). The pipeline
// computes the same fingerprint of its input (node universe in canonical
// id order, public adjacency, marks), written to Config.DataFingerprint,
// and the driver prints recommend's notice when it differs.
//
// Cost. protect.Fingerprint is SHA-256 over one canonical byte stream in
// id order, which is inherently sequential: every node's part (its label;
// its public neighbours; its marks, as uvarints) is encoded on the workers
// in parallel, but the parts are then gathered on ONE worker, sorted by id
// and hashed. That worker holds about the encoded size of the input: the
// labels plus one to five bytes per public edge end and per mark end
// (roughly the single-machine graph's adjacency arrays), and hashes it at
// a few hundred MB/s. The stage is skipped when the model records no
// fingerprint (nothing to compare) or the driver is run with
// --data-check=false (for graphs too large for one worker's memory).

// FPPart is one node's share of the fingerprint's byte stream: B holds its
// label part, then its public adjacency part (from L), then its marks part
// (from A).
type FPPart struct {
	ID   int32
	B    []byte
	L, A int32
}

// fpPartFn encodes a node's parts exactly as protect.Fingerprint: the
// label (length-prefixed), the public neighbours (the edges that are not
// marked; count-prefixed, ascending ids), the marks (count-prefixed,
// ascending ids).
func fpPartFn(n Node) (int, FPPart) {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(n.Label)))
	b = append(b, n.Label...)
	l := int32(len(b))
	pub := 0
	for _, v := range n.Nbrs {
		if !has(n.Prot, v) {
			pub++
		}
	}
	b = binary.AppendUvarint(b, uint64(pub))
	for _, v := range n.Nbrs {
		if !has(n.Prot, v) {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	a := int32(len(b))
	b = binary.AppendUvarint(b, uint64(len(n.Prot)))
	for _, x := range n.Prot {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return 0, FPPart{ID: n.ID, B: b, L: l, A: a}
}

// fingerprintFn gathers every node's parts, hashes them in id order and
// writes the fingerprint ("v1:" + hex SHA-256, one line) to Path.
type fingerprintFn struct{ Path string }

func (f *fingerprintFn) ProcessElement(ctx context.Context, _ int, it func(*FPPart) bool, n int) error {
	parts := make([]FPPart, 0, n)
	var p FPPart
	for it(&p) {
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b FPPart) int { return cmp.Compare(a.ID, b.ID) })
	if len(parts) != n {
		return fmt.Errorf("fingerprint: %d node records for %d nodes (internal error)", len(parts), n)
	}
	for i := range parts {
		if parts[i].ID != int32(i) {
			return fmt.Errorf("fingerprint: node ids are not 0..%d (internal error)", n-1)
		}
	}
	fp := fingerprintOf(parts)
	return writeLines(ctx, f.Path, []Final{{Line: fp}}, func(x *Final) string { return x.Line })
}

// fingerprintOf hashes the parts (in id order) as protect.Fingerprint
// hashes a graph and its marks.
func fingerprintOf(parts []FPPart) string {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 1<<16)
	w.WriteString("dplp-data-v1\x00")
	w.Write(binary.AppendUvarint(nil, uint64(len(parts))))
	for _, p := range parts {
		w.Write(p.B[:p.L])
	}
	for _, p := range parts {
		w.Write(p.B[p.L:p.A])
	}
	for _, p := range parts {
		w.Write(p.B[p.A:])
	}
	w.Flush()
	return "v1:" + hex.EncodeToString(h.Sum(nil))
}

// Fingerprint adds the data fingerprint of the nodes (Nodes' records, n of
// them) to s, written to path.
func Fingerprint(s beam.Scope, path string, nodes, n beam.PCollection) {
	s = s.Scope("Fingerprint")
	beam.ParDo0(s, &fingerprintFn{Path: path}, beam.GroupByKey(s, beam.ParDo(s, fpPartFn, nodes)), beam.SideInput{Input: n})
}

// ReadFingerprint reads the fingerprint file the pipeline wrote.
func ReadFingerprint(ctx context.Context, path string) (string, error) {
	rc, err := openRead(ctx, path)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 1<<10))
	if err != nil {
		return "", err
	}
	fp := strings.TrimSpace(string(b))
	if !strings.HasPrefix(fp, "v1:") {
		return "", fmt.Errorf("%s: not a data fingerprint", path)
	}
	return fp, nil
}
