package protect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// The marks reader shares the edge-list line syntax: CR/LF/CRLF line ends,
// an initial byte-order mark skipped, quotes, NUL and invalid UTF-8 are
// errors naming file:line.
func TestParseMarksLineSyntax(t *testing.T) {
	g := mustGraph(t, "a b\nb c\nc d\nzürich a\n")
	id := func(l string) int32 { x, _ := g.ID(l); return x }
	for _, in := range []string{"a b\rb c\rzürich d", "\xEF\xBB\xBFa b\r\nb c\r\nzürich d\r\n", "a,b\n# caf\xe9\nb c\n\nzürich\td\n"} {
		s, err := Parse(strings.NewReader(in), "p", g)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if s.Len() != 3 || !s.Has(id("a"), id("b")) || !s.Has(id("c"), id("b")) || !s.Has(id("zürich"), id("d")) {
			t.Fatalf("%q: wrong set %v", in, s.Pairs())
		}
	}
	for _, c := range []struct{ in, err string }{
		{"a b\r\"b\" c\r", "p:2: double quote in a node label"},
		{"a b\nb c\nc\xe9 d\n", "p:3: a node label is not valid UTF-8"},
		{"a b\rb\r", "p:2: expected two node labels"},
		{"a b\r\nb \x00c\r\n", "p:2: NUL byte"},
	} {
		if _, err := Parse(strings.NewReader(c.in), "p", g); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%q: err %v, want %q", c.in, err, c.err)
		}
	}
}

func TestReadMarksTruncated(t *testing.T) {
	g := mustGraph(t, "a b\nb c\nc d\n")
	var plain bytes.Buffer
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&plain, "a %c\n", "bcd"[i%3])
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	dir := t.TempDir()
	for _, cut := range []int{0, 5, 12, gz.Len() / 2, gz.Len() - 3} {
		p := filepath.Join(dir, fmt.Sprintf("m%d.gz", cut))
		os.WriteFile(p, gz.Bytes()[:cut], 0o644)
		if _, err := ReadFile(p, g); err == nil || !strings.Contains(err.Error(), p+": truncated compressed file") {
			t.Fatalf("cut %d: %v", cut, err)
		}
	}
}

func TestFromCSR(t *testing.T) {
	g := mustGraph(t, "a b\nb c\nc d\nd a\n")
	s, err := Parse(strings.NewReader("a b\na c\nd b\n"), "p", g)
	if err != nil {
		t.Fatal(err)
	}
	off := make([]int64, s.N()+1)
	var adj []int32
	for w := 0; w < s.N(); w++ {
		adj = append(adj, s.Of(int32(w))...)
		off[w+1] = int64(len(adj))
	}
	back, err := FromCSR(off, adj)
	if err != nil || !equalPairs(back.Pairs(), s.Pairs()) {
		t.Fatalf("round trip: %v %v", err, back)
	}
	for _, bad := range []struct {
		off []int64
		adj []int32
	}{
		{[]int64{0, 1, 1}, []int32{1}},             // asymmetric
		{[]int64{0, 1, 2}, []int32{0, 1}},          // self-pairs
		{[]int64{0, 1, 2}, []int32{5, 0}},          // out of range
		{[]int64{0, 2, 1}, []int32{1, 0}},          // decreasing offsets
		{[]int64{0, 1, 3}, []int32{1, 0}},          // offsets past the end
		{[]int64{0}, nil},                          // no nodes
		{[]int64{0, 2, 4, 4}, []int32{1, 1, 0, 0}}, // repeats
	} {
		if _, err := FromCSR(bad.off, bad.adj); err == nil {
			t.Fatalf("FromCSR(%v, %v) accepted", bad.off, bad.adj)
		}
	}
}
