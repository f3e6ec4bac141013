package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPrinter pins the bytes of each format: the commands' outputs are
// compared byte for byte across versions.
func TestPrinter(t *testing.T) {
	var b strings.Builder
	p := newPrinter(&b, formatTable)
	p.line("heading %d", 1)
	p.row("name", "value")
	p.row("a", "1")
	p.row("longer name", "2.5")
	p.line("between")
	p.row("x", "y")
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	const table = "heading 1\nname         value\na            1\nlonger name  2.5\nbetween\nx  y\n"
	if b.String() != table {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), table)
	}

	b.Reset()
	p = newPrinter(&b, formatCSV)
	p.row("query", "candidate")
	p.row(`a,b`, `say "hi"`)
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	if want := "query,candidate\n\"a,b\",\"say \"\"hi\"\"\"\n"; b.String() != want {
		t.Errorf("csv: %q, want %q", b.String(), want)
	}

	b.Reset()
	p = newPrinter(&b, formatJSONL)
	p.value(map[string]int{"b": 2, "a": 1})
	p.value([]string{"<x>"})
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":1,\"b\":2}\n[\"\\u003cx\\u003e\"]\n"; b.String() != want {
		t.Errorf("jsonl: %q, want %q", b.String(), want)
	}

	b.Reset()
	if err := printJSON(&b, struct {
		N int `json:"n"`
	}{3}); err != nil || b.String() != "{\"n\":3}\n" {
		t.Errorf("printJSON: %q, %v", b.String(), err)
	}
}

// TestRecLineJSON: recommend's hand-written JSON line is byte-identical to
// encoding/json's, for arbitrary labels, costs and flags.
func TestRecLineJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := recLine{
			User:            rapid.String().Draw(t, "user"),
			Recommendations: rapid.SliceOfN(rapid.OneOf(rapid.String(), rapid.StringMatching(`[0-9]{1,7}`)), 0, 5).Draw(t, "list"),
			K:               rapid.IntRange(1, 1<<20).Draw(t, "k"),
			EpsP:            rapid.Float64Range(0, 1e3).Draw(t, "eps"),
			Cost:            rapid.OneOf(rapid.Float64Range(0, 1e6), rapid.Float64Range(0, 1e-6)).Draw(t, "cost"),
			Seeded:          rapid.Bool().Draw(t, "seeded"),
		}
		want, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("appendJSON = %s\nencoding/json = %s", got, want)
		}
	})
}
