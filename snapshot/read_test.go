package snapshot

import (
	"bytes"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"pgregory.net/rapid"
)

// TestCRC32Combine: the combined checksum of two pieces is the checksum of
// their concatenation, for any split (empty pieces included).
func TestCRC32Combine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 3000).Draw(t, "b")
		k := rapid.IntRange(0, len(b)).Draw(t, "k")
		a, c := crc32.Checksum(b[:k], castagnoli), crc32.Checksum(b[k:], castagnoli)
		if got, want := crc32Combine(a, c, int64(len(b)-k)), crc32.Checksum(b, castagnoli); got != want {
			t.Fatalf("combine at %d of %d: %#x, want %#x", k, len(b), got, want)
		}
	})
	// Long second pieces (the squarings of xPow8n's high bits).
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 5<<20+3)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for _, k := range []int{0, 1, 80, 1 << 20, len(b) - 1, len(b)} {
		a, c := crc32.Checksum(b[:k], castagnoli), crc32.Checksum(b[k:], castagnoli)
		if got, want := crc32Combine(a, c, int64(len(b)-k)), crc32.Checksum(b, castagnoli); got != want {
			t.Fatalf("combine at %d of %d: %#x, want %#x", k, len(b), got, want)
		}
	}
}

// TestReadFile: readFile gives the bytes os.ReadFile gives and, when it says
// so, the payload's checksum, for sizes around the header, the pieces and
// the parallel threshold; files it cannot read in place (a directory, a
// missing file, a pipe) fail or fall back as os.ReadFile does.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, headerSize - 1, headerSize, headerSize + 1, readPiece - 1, readPiece + headerSize + 7,
		parallelRead - 1, parallelRead, parallelRead + 3*readPiece + 5} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		data, crc, ok, err := readFile(p)
		if err != nil || !bytes.Equal(data, b) {
			t.Fatalf("size %d: %d bytes read, error %v", size, len(data), err)
		}
		if ok != (size > headerSize) {
			t.Fatalf("size %d: checksum computed %v", size, ok)
		}
		if ok && crc != crc32.Checksum(b[headerSize:], castagnoli) {
			t.Fatalf("size %d: checksum %#x, want %#x", size, crc, crc32.Checksum(b[headerSize:], castagnoli))
		}
	}
	if _, _, _, err := readFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	if _, _, _, err := readFile(dir); err == nil {
		t.Fatal("directory read")
	}
	if _, err := Load(dir); err == nil {
		t.Fatal("directory loaded")
	}
}

// TestLoadChecksumMismatch: a file whose payload checksum does not match
// (computed as it is read) is reported as a checksum mismatch by Load, as
// by Decode, even when the content is also structurally invalid; and Load
// and Decode agree on every truncation and on every flipped byte.
func TestLoadChecksumMismatch(t *testing.T) {
	g, bs := parse(t, "a b\nb c\nc a\nc d\n")
	good := encode(t, g, nil, bs)
	dir := t.TempDir()
	p := filepath.Join(dir, "g.dplpg")
	bad := append([]byte(nil), good...)
	adj0 := headerSize + int(pad8(uint64(g.N()+1)*8))
	bad[adj0] ^= 2 // a's first neighbour b -> d: asymmetric, stale checksum
	os.WriteFile(p, bad, 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "payload checksum mismatch") {
		t.Fatalf("asymmetric, stale checksum: %v", err)
	}
	for k := 0; k <= len(good); k++ {
		for _, flip := range []int{-1, k} {
			b := append([]byte(nil), good[:k]...)
			if flip >= 0 && flip < len(b) {
				b[flip] ^= 0x10
			}
			os.WriteFile(p, b, 0o644)
			_, errL := Load(p)
			_, errD := Decode(b, p)
			if (errL == nil) != (errD == nil) || errL != nil && errL.Error() != errD.Error() {
				t.Fatalf("cut at %d, flip %d: Load %v, Decode %v", k, flip, errL, errD)
			}
		}
	}
}

// TestReadFileSizeChange: a file cut or extended between its size and its
// reads is read again by os.ReadFile (its content as it is then), and its
// checksum left to Decode.
func TestReadFileSizeChange(t *testing.T) {
	defer func() { readHook = nil }()
	p := filepath.Join(t.TempDir(), "f")
	for _, c := range []struct{ size, to int }{
		{parallelRead + 1000, parallelRead / 3}, {parallelRead + 1000, parallelRead + 1001},
		{4000, 100}, {4000, 4001}, {4000, 10},
	} {
		b := bytes.Repeat([]byte{7}, max(c.size, c.to))
		if err := os.WriteFile(p, b[:c.size], 0o644); err != nil {
			t.Fatal(err)
		}
		readHook = func() {
			if err := os.WriteFile(p, b[:c.to], 0o644); err != nil {
				t.Error(err)
			}
		}
		data, _, ok, err := readFile(p)
		if err != nil || ok || !bytes.Equal(data, b[:c.to]) {
			t.Fatalf("%d bytes, then %d: %d bytes read, checksum %v, error %v", c.size, c.to, len(data), ok, err)
		}
	}
}

// TestLoadLarge: a snapshot large enough for the parallel read loads into
// the same graph as Decode of os.ReadFile's bytes, and a flipped payload
// byte in its second half is a checksum mismatch.
func TestLoadLarge(t *testing.T) {
	const n = 700000
	edges := make([]graph.Edge, 0, n+n/3)
	for i := 0; i+1 < n; i++ {
		edges = append(edges, graph.Edge{U: int32(i), V: int32(i + 1)})
	}
	for i := 0; i+7 < n; i += 3 {
		edges = append(edges, graph.Edge{U: int32(i), V: int32(i + 7)})
	}
	g, bs, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "big.dplpg")
	if err := WriteFile(p, &Snapshot{Graph: g, Build: bs}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || len(b) < parallelRead {
		t.Fatalf("%d bytes (want at least %d): %v", len(b), parallelRead, err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b, p)
	if err != nil {
		t.Fatal(err)
	}
	sameGraph(t, d.Graph, s.Graph)
	sameGraph(t, g, s.Graph)
	b[len(b)*3/4] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "payload checksum mismatch") {
		t.Fatalf("flipped byte: %v", err)
	}
}
