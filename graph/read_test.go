package graph

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"pgregory.net/rapid"
)

// withBlockSize runs f with the parser cutting its input into blocks of
// about n bytes.
func withBlockSize(n int, f func()) {
	old := parseBlockSize
	parseBlockSize = n
	defer func() { parseBlockSize = old }()
	f()
}

func TestLineEndsAndBOM(t *testing.T) {
	cases := []struct {
		name, in string
		nodes    int
		edges    int64
		lines    int64
	}{
		{"lf", "1 2\n2 3\n3 1\n", 3, 3, 3},
		{"crlf", "1 2\r\n2 3\r\n3 1\r\n", 3, 3, 3},
		{"cr only", "1 2\r2 3\r3 1\r", 3, 3, 3},
		{"cr only, no final", "1 2\r2 3\r3 1", 3, 3, 3},
		{"mixed", "1 2\r2 3\n3 1\r\n4 1", 4, 4, 4},
		{"blank cr lines", "1 2\r\r\r2 3\r", 3, 2, 4},
		{"bom", "\xEF\xBB\xBFa b\nb c\n", 3, 2, 2},
		{"bom cr", "\xEF\xBB\xBFa b\rb c", 3, 2, 2},
	}
	for _, c := range cases {
		for _, bs := range []int{1, 3, 4 << 20} {
			withBlockSize(bs, func() {
				g, rep, err := Parse(strings.NewReader(c.in), "t")
				if err != nil {
					t.Fatalf("%s (block %d): %v", c.name, bs, err)
				}
				if g.N() != c.nodes || g.M() != c.edges || rep.Lines != c.lines {
					t.Fatalf("%s (block %d): n=%d m=%d lines=%d, want %d %d %d", c.name, bs, g.N(), g.M(), rep.Lines, c.nodes, c.edges, c.lines)
				}
				if strings.Contains(c.in, "a b") {
					if _, ok := g.ID("a"); !ok || g.Label(0) != "a" {
						t.Fatalf("%s: first label %q, want \"a\" (BOM not stripped)", c.name, g.Label(0))
					}
				}
			})
		}
	}
	// A mark after the start is data, whatever the block size (it was
	// skipped at the start of a later block when the first block was
	// shorter than the mark: found by TestParseMatchesReference).
	for _, in := range []string{"\n\xEF\xBB\xBF", "\n\xEF\xBB\xBFa b\n", "1 2\n\xEF\xBB\xBFa b\n"} {
		for _, bs := range []int{1, 2, 3, 4 << 20} {
			withBlockSize(bs, func() {
				g, _, err := Parse(strings.NewReader(in), "t")
				if err == nil && g.N() > 0 {
					if _, ok := g.ID("\ufeffa"); ok {
						return
					}
				}
				var le *LineError
				if !errors.As(err, &le) || le.Line != 2 {
					t.Fatalf("%q (block %d): %v, want the mark kept in line 2 (an error there, or the label \"\\ufeffa\")", in, bs, err)
				}
			})
		}
	}
	// Line numbers count CR-only line ends.
	_, _, err := Parse(strings.NewReader("1 2\r2 3\r4\r"), "t")
	if err == nil || !strings.Contains(err.Error(), "t:3: expected two node labels") {
		t.Fatalf("CR-only error: %v", err)
	}
}

func TestLabelRules(t *testing.T) {
	cases := []struct{ name, in, err string }{
		{"quoted labels", "a b\n\"New York\" \"Boston\"\n", "t:2: double quote in a node label"},
		{"quoted label", "\"a\" b\n", "t:1: double quote in a node label"},
		{"quote in weight", "a b \"1\"\n", "t:1: double quote in column 3"},
		{"latin-1", "a b\ncaf\xe9 b\n", "t:2: a node label is not valid UTF-8: \"caf\\xe9\""},
		{"bad utf-8 second", "a b\r\nb \xff\xfe\r\n", "t:2: a node label is not valid UTF-8"},
		{"surrogate", "a \xed\xa0\x80\n", "t:1: a node label is not valid UTF-8"},
		{"nul", "1 2\na\x00 b\n", "t:2: NUL byte in a node label"},
		{"one field", "1 2\n\n3\n", "t:3: expected two node labels, found one field \"3\""},
	}
	for _, c := range cases {
		for _, bs := range []int{1, 5, 4 << 20} {
			withBlockSize(bs, func() {
				g, _, err := Parse(strings.NewReader(c.in), "t")
				if err == nil || !strings.Contains(err.Error(), c.err) || g != nil {
					t.Fatalf("%s (block %d): err = %v, want %q", c.name, bs, err, c.err)
				}
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("%s: not a *LineError: %T", c.name, err)
				}
			})
		}
	}
	// Valid UTF-8 and comments with anything in them are fine.
	g, _, err := Parse(strings.NewReader("# caf\xe9 \"quoted\" \x00\nzürich 東京\n"), "t")
	if err != nil || g.Label(0) != "zürich" || g.Label(1) != "東京" {
		t.Fatalf("utf-8 labels: %v", err)
	}
}

func TestTruncatedCompressed(t *testing.T) {
	var plain bytes.Buffer
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&plain, "%d %d\n", i, (i*7+1)%3000)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	var zs bytes.Buffer
	ze, _ := zstd.NewWriter(&zs)
	ze.Write(plain.Bytes())
	ze.Close()
	dir := t.TempDir()
	for _, c := range []struct {
		ext  string
		data []byte
	}{{".gz", gz.Bytes()}, {".zst", zs.Bytes()}} {
		full := filepath.Join(dir, "full"+c.ext)
		os.WriteFile(full, c.data, 0o644)
		if _, _, err := ReadFile(full); err != nil {
			t.Fatalf("%s: %v", full, err)
		}
		cuts := []int{0, 1, 2, 3, 4, 5, 9, 10, 11, 17, len(c.data) / 3, len(c.data) / 2, len(c.data) - 9, len(c.data) - 5, len(c.data) - 4, len(c.data) - 1}
		for k := 1; k < 60; k++ {
			cuts = append(cuts, k*len(c.data)/60)
		}
		for _, cut := range cuts {
			p := filepath.Join(dir, fmt.Sprintf("cut%d%s", cut, c.ext))
			os.WriteFile(p, c.data[:cut], 0o644)
			for _, read := range []func(string) error{
				func(p string) error { _, _, err := ReadFile(p); return err },
				func(p string) error { // the serial scanner
					r, cl, err := Open(p)
					if err != nil {
						return err
					}
					defer cl.Close()
					_, err = ScanPairs(r, p, func(int64, []byte, []byte, bool) error { return nil })
					return err
				},
			} {
				err := read(p)
				if err == nil || !strings.Contains(err.Error(), "truncated compressed file") || !strings.Contains(err.Error(), p) {
					t.Fatalf("cut at %d of %d: err = %v", cut, len(c.data), err)
				}
			}
		}
	}
}

// refParse is a direct implementation of the edge-list rules: it returns the
// labels in order of first appearance, the edge lines as id pairs, and the
// 1-based line of the first error (0 if none).
func refParse(in string) (labels []string, edges []Edge, errLine int64) {
	in = strings.TrimPrefix(in, "\xEF\xBB\xBF")
	var lines []string
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in)
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	index := map[string]int32{}
	id := func(s string) int32 {
		if v, ok := index[s]; ok {
			return v
		}
		index[s] = int32(len(labels))
		labels = append(labels, s)
		return index[s]
	}
	for k, l := range lines {
		f := strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(" \t,\v\f", r) })
		if len(f) == 0 || f[0][0] == '#' || f[0][0] == '%' {
			continue
		}
		bad := len(f) < 2
		for _, x := range f {
			if strings.ContainsAny(x, "\"\x00") || !utf8.ValidString(x) {
				bad = true
			}
		}
		if bad {
			return nil, nil, int64(k + 1)
		}
		edges = append(edges, Edge{id(f[0]), id(f[1])})
	}
	return refCanonical(labels, edges)
}

// refCanonical renumbers a first-appearance parse canonically, by brute
// force: canonical decimals below 2^31 by value, then the rest bytewise.
func refCanonical(labels []string, edges []Edge) ([]string, []Edge, int64) {
	key := func(s string) (bool, uint64) {
		v, err := strconv.ParseUint(s, 10, 64)
		return err == nil && strconv.FormatUint(v, 10) == s && v < 1<<31, v
	}
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := labels[order[i]], labels[order[j]]
		da, va := key(a)
		db, vb := key(b)
		if da != db {
			return da
		}
		if da {
			return va < vb
		}
		return a < b
	})
	rank := make([]int32, len(labels))
	out := make([]string, len(labels))
	for r, i := range order {
		rank[i] = int32(r)
		out[r] = labels[i]
	}
	for i := range edges {
		edges[i] = Edge{rank[edges[i].U], rank[edges[i].V]}
	}
	return out, edges, 0
}

// checkAgainstRef parses in with the real parser and the reference and
// compares labels, edges and error lines.
func checkAgainstRef(t interface {
	Fatalf(string, ...any)
}, in string) {
	labels, edges, errLine := refParse(in)
	g, rep, err := Parse(strings.NewReader(in), "r")
	if errLine > 0 {
		var le *LineError
		if !errors.As(err, &le) || le.Line != errLine {
			t.Fatalf("%q: err %v, want an error at line %d", in, err, errLine)
		}
		return
	}
	if len(edges) == 0 {
		if !errors.Is(err, ErrEmpty) {
			t.Fatalf("%q: err %v, want ErrEmpty", in, err)
		}
		return
	}
	want, _, werr := FromEdges(len(labels), edges, labels)
	if werr != nil {
		if !errors.Is(err, ErrEmpty) {
			t.Fatalf("%q: err %v, want %v", in, err, werr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%q: %v", in, err)
	}
	if rep.EdgeLines != int64(len(edges)) {
		t.Fatalf("%q: %d edge lines, want %d", in, rep.EdgeLines, len(edges))
	}
	got := make([]string, g.N())
	for i := range got {
		got[i] = g.Label(int32(i))
	}
	if !slices.Equal(got, labels) || !slices.Equal(g.Off, want.Off) || !slices.Equal(g.Adj, want.Adj) {
		t.Fatalf("%.200q: labels differ from the canonical reference (%d vs %d) or the CSR does", in, len(got), len(labels))
	}
	for i, l := range labels {
		if id, ok := g.ID(l); !ok || id != int32(i) {
			t.Fatalf("%q: ID(%q) = %d, %v", in, l, id, ok)
		}
	}
}

// TestParseMatchesReference: on random inputs built from a small alphabet of
// labels, separators, line ends and bad bytes, the parallel parser cut into
// tiny blocks assigns the same ids, edges and error lines as the reference.
func TestParseMatchesReference(t *testing.T) {
	pieces := []string{"1", "2", "10", "0", "01", "007", "2147483647", "2147483648", "99999999999", "-3",
		"a", "bb", "é", "東京", "#", "%", " ", "\t", ",", "\n", "\r", "\r\n", "\n", "\n", "\xEF\xBB\xBF", "\"", "\xff", "\x00", "x"}
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(0, 80).Draw(t, "k")
		var sb strings.Builder
		for i := 0; i < k; i++ {
			sb.WriteString(pieces[rapid.IntRange(0, len(pieces)-1).Draw(t, "p")])
		}
		in := sb.String()
		bs := rapid.SampledFrom([]int{1, 2, 3, 7, 64, 4 << 20}).Draw(t, "block")
		withBlockSize(bs, func() { checkAgainstRef(t, in) })
	})
}

// TestParseLargeMatchesReference checks ids and line numbers across many
// blocks on a bigger input with string and decimal labels.
func TestParseLargeMatchesReference(t *testing.T) {
	var sb strings.Builder
	for i := 0; i < 20000; i++ {
		u, v := (i*7919)%5003, (i*104729+3)%4999
		switch i % 5 {
		case 0:
			fmt.Fprintf(&sb, "%d,%d\r\n", u, v)
		case 1:
			fmt.Fprintf(&sb, "n%d\tn%d 1.5\n", u, v)
		case 2:
			fmt.Fprintf(&sb, "%d n%d\r", u, v)
		case 3:
			fmt.Fprintf(&sb, "# comment %d\n", i)
		default:
			fmt.Fprintf(&sb, "0%d %d\n", u, v+3000000000)
		}
	}
	in := sb.String()
	for _, bs := range []int{100, 4096, 1 << 16} {
		withBlockSize(bs, func() { checkAgainstRef(t, in) })
		bad := in + "x\n"
		withBlockSize(bs, func() { checkAgainstRef(t, bad) })
		mid := in[:len(in)/2] + "\nlonely\n" + in[len(in)/2:]
		withBlockSize(bs, func() { checkAgainstRef(t, mid) })
	}
}

func FuzzParseBlocks(f *testing.F) {
	for _, s := range []string{"1 2\n", "a,b,3\r# x\r\n", "\xEF\xBB\xBF1 1\r2 1", "x\n", "\"a b\" c\n", "caf\xe9 x\n"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, bs uint8) {
		withBlockSize(int(bs)+1, func() { checkAgainstRef(t, in) })
	})
}

// The score-file reader (predict.ReadScores) goes through ScanTriples: the
// same line rules apply, with the third field passed through.
func TestScanTriplesLineRules(t *testing.T) {
	var got []string
	n, err := ScanTriples(strings.NewReader("\xEF\xBB\xBFa,b,0.5\rb c\r\n# x\nc,d,1,extra"), "s", func(line int64, a, b, c []byte) error {
		got = append(got, fmt.Sprintf("%d:%s-%s-%s", line, a, b, c))
		return nil
	})
	if want := []string{"1:a-b-0.5", "2:b-c-", "4:c-d-1"}; err != nil || n != 4 || !slices.Equal(got, want) {
		t.Fatalf("got %q, %d lines, %v", got, n, err)
	}
	for _, c := range []struct{ in, err string }{
		{"a b 0.5\r\"a\" b 1\r", "s:2: double quote in a node label"},
		{"a b \"0.5\"\n", "s:1: double quote in column 3"},
		{"a b 0.5\na b \xff\n", "s:2: column 3 is not valid UTF-8"},
	} {
		if _, err := ScanTriples(strings.NewReader(c.in), "s", func(int64, []byte, []byte, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Fatalf("%q: %v, want %q", c.in, err, c.err)
		}
	}
}
