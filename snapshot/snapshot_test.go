package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"pgregory.net/rapid"
)

func parse(t testing.TB, s string) (*graph.Graph, graph.BuildStats) {
	t.Helper()
	g, rep, err := graph.Parse(strings.NewReader(s), "g")
	if err != nil {
		t.Fatal(err)
	}
	return g, rep.BuildStats
}

type fataler interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

func encode(t fataler, g *graph.Graph, m *protect.Set, bs graph.BuildStats) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, &Snapshot{Graph: g, Marks: m, Build: bs}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sameGraph(t fataler, a, b *graph.Graph) {
	t.Helper()
	if !slices.Equal(a.Off, b.Off) || !slices.Equal(a.Adj, b.Adj) {
		t.Fatalf("CSR differs: %v %v vs %v %v", a.Off, a.Adj, b.Off, b.Adj)
	}
	for i := 0; i < a.N(); i++ {
		if a.Label(int32(i)) != b.Label(int32(i)) {
			t.Fatalf("label %d: %q vs %q", i, a.Label(int32(i)), b.Label(int32(i)))
		}
		if id, ok := b.ID(a.Label(int32(i))); !ok || id != int32(i) {
			t.Fatalf("ID(%q) = %d, %v", a.Label(int32(i)), id, ok)
		}
	}
}

func samePairs(t fataler, a, b *protect.Set) {
	t.Helper()
	if (a == nil) != (b == nil) {
		t.Fatalf("marks %v vs %v", a, b)
	}
	if a != nil && !slices.Equal(a.Pairs(), b.Pairs()) {
		t.Fatalf("marks %v vs %v", a.Pairs(), b.Pairs())
	}
}

func TestRoundTripFile(t *testing.T) {
	g, bs := parse(t, "alice bob\nbob carol\ncarol alice\ncarol dave\ndave dave\nbob alice\n")
	m, err := protect.Parse(strings.NewReader("alice dave\nbob carol\n"), "m", g)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "g.dplpg")
	if err := WriteFile(p, &Snapshot{Graph: g, Marks: m, Build: bs}); err != nil {
		t.Fatal(err)
	}
	if ok, err := IsSnapshot(p); !ok || err != nil {
		t.Fatalf("IsSnapshot = %v, %v", ok, err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sameGraph(t, g, s.Graph)
	samePairs(t, m, s.Marks)
	if s.Build != bs || bs.SelfLoopsDropped != 1 || bs.DuplicatesMerged != 1 {
		t.Fatalf("build stats %+v, want %+v", s.Build, bs)
	}
	// Decimal labels equal to the ids are not stored and come back the same.
	g2, bs2 := parse(t, "0 1\n1 2\n2 0\n")
	s2, err := Decode(encode(t, g2, nil, bs2), "x")
	if err != nil || s2.Marks != nil {
		t.Fatal(err)
	}
	sameGraph(t, g2, s2.Graph)
	if s2.Graph.Labels() != nil {
		t.Fatal("decimal-id labels stored")
	}
	// A text file is not a snapshot.
	txt := filepath.Join(t.TempDir(), "g.txt")
	os.WriteFile(txt, []byte("1 2\n"), 0o644)
	if ok, err := IsSnapshot(txt); ok || err != nil {
		t.Fatalf("text file: IsSnapshot = %v, %v", ok, err)
	}
}

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 40).Draw(t, "n")
		m := rapid.IntRange(1, 150).Draw(t, "m")
		edges := make([]graph.Edge, m)
		for i := range edges {
			edges[i] = graph.Edge{U: int32(rapid.IntRange(0, n-1).Draw(t, "u")), V: int32(rapid.IntRange(0, n-1).Draw(t, "v"))}
		}
		var labels []string
		switch rapid.IntRange(0, 2).Draw(t, "labels") {
		case 1:
			seen := map[string]bool{}
			for len(labels) < n {
				l := rapid.String().Draw(t, "label")
				if !seen[l] {
					seen[l] = true
					labels = append(labels, l)
				}
			}
		case 2:
			for i := 0; i < n; i++ {
				labels = append(labels, fmt.Sprint(i))
			}
		}
		g, bs, err := graph.FromEdges(n, edges, labels)
		if err != nil {
			t.Skip("no edges")
		}
		var marks *protect.Set
		if rapid.Bool().Draw(t, "marks") {
			var pairs []graph.Edge
			for i := rapid.IntRange(0, 60).Draw(t, "k"); i > 0; i-- {
				u, v := rapid.IntRange(0, n-1).Draw(t, "a"), rapid.IntRange(0, n-1).Draw(t, "b")
				if u != v {
					pairs = append(pairs, graph.Edge{U: int32(u), V: int32(v)})
				}
			}
			if marks, err = protect.New(n, pairs); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Decode(encode(t, g, marks, bs), "x")
		if err != nil {
			t.Fatal(err)
		}
		// A graph not numbered canonically comes back renumbered, marks too.
		want, rank := graph.Canonical(g)
		if rank != nil && marks != nil {
			if marks, err = marks.Renumber(want.N(), rank); err != nil {
				t.Fatal(err)
			}
		}
		if !s.Graph.IsCanonical() {
			t.Fatalf("decoded graph is not numbered canonically")
		}
		sameGraph(t, want, s.Graph)
		samePairs(t, marks, s.Marks)
		if s.Build != bs {
			t.Fatalf("build stats %+v vs %+v", s.Build, bs)
		}
	})
}

// fixCRC recomputes both checksums so that structural checks are reached.
func fixCRC(b []byte) []byte {
	if len(b) < headerSize {
		return b
	}
	b = slices.Clone(b)
	binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[headerSize:], castagnoli))
	binary.LittleEndian.PutUint32(b[76:], crc32.Checksum(b[:76], castagnoli))
	return b
}

func TestCorruption(t *testing.T) {
	g, bs := parse(t, "a b\nb c\nc a\nc d\n")
	m, _ := protect.Parse(strings.NewReader("a d\n"), "m", g)
	good := encode(t, g, m, bs)
	// Every truncation is an error naming the file.
	for k := 0; k < len(good); k++ {
		_, err := Decode(good[:k], "f.dplpg")
		if err == nil || !strings.HasPrefix(err.Error(), "f.dplpg: ") {
			t.Fatalf("cut at %d: %v", k, err)
		}
		if k >= 1 && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("cut at %d: %v", k, err)
		}
	}
	// Every flipped bit is detected.
	for i := 0; i < len(good); i++ {
		for bit := 0; bit < 8; bit++ {
			b := slices.Clone(good)
			b[i] ^= 1 << bit
			if _, err := Decode(b, "f"); err == nil {
				t.Fatalf("flip of bit %d of byte %d accepted", bit, i)
			}
		}
	}
	// Trailing bytes, another version, not a snapshot.
	if _, err := Decode(append(slices.Clone(good), 0), "f"); err == nil || !strings.Contains(err.Error(), "after the end") {
		t.Fatalf("trailing byte: %v", err)
	}
	v2 := slices.Clone(good)
	binary.LittleEndian.PutUint32(v2[8:], 2)
	if _, err := Decode(fixCRC(v2), "f"); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("version 2: %v", err)
	}
	if _, err := Decode([]byte("a b\n"), "f"); !errors.Is(err, ErrNotSnapshot) {
		t.Fatalf("text: %v", err)
	}
	// Structurally invalid content with valid checksums: asymmetric adjacency.
	bad := slices.Clone(good)
	adj0 := headerSize + int(pad8(uint64(g.N()+1)*8))
	binary.LittleEndian.PutUint32(bad[adj0:], 3) // a's first neighbour b -> d
	if _, err := Decode(fixCRC(bad), "f"); err == nil || !strings.Contains(err.Error(), "corrupted snapshot") {
		t.Fatalf("asymmetric: %v", err)
	}
	// The same content without a matching payload checksum: the checksum
	// (computed beside the structural checks) is what is reported.
	if _, err := Decode(bad, "f"); err == nil || !strings.Contains(err.Error(), "payload checksum mismatch") {
		t.Fatalf("asymmetric, stale checksum: %v", err)
	}
	// A payload change the structural checks accept is caught too.
	lbl := slices.Clone(good)
	lbl[len(lbl)-1] ^= 1
	if _, err := Decode(lbl, "f"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("last byte flipped: %v", err)
	}
	// Huge counts in the header do not allocate or panic.
	huge := slices.Clone(good)
	binary.LittleEndian.PutUint64(huge[24:], 1<<60)
	if _, err := Decode(fixCRC(huge), "f"); err == nil {
		t.Fatal("huge adjacency count accepted")
	}
}

func FuzzSnapshot(f *testing.F) {
	g, bs := parse(f, "a b\nb c\nc a\nc d\n")
	m, _ := protect.Parse(strings.NewReader("a d\nb c\n"), "m", g)
	g2, bs2 := parse(f, "0 1\n1 2\n")
	f.Add(encode(f, g, m, bs))
	f.Add(encode(f, g, nil, bs))
	f.Add(encode(f, g2, nil, bs2))
	f.Add([]byte(Magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, fixCRC(data)} {
			s, err := Decode(d, "fuzz")
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz: ") {
					t.Fatalf("error without the file name: %v", err)
				}
				continue
			}
			// Whatever loads is a valid graph that round-trips.
			back, err := Decode(encode(t, s.Graph, s.Marks, s.Build), "again")
			if err != nil {
				t.Fatalf("re-encoding a loaded snapshot: %v", err)
			}
			sameGraph(t, s.Graph, back.Graph)
			samePairs(t, s.Marks, back.Marks)
		}
	})
}
