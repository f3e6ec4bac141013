package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
)

// Reading a file in shards of any size gives exactly graph.ScanPairs' lines
// of the whole file, in order, whatever the line ends (LF, CRLF, lone CR)
// and wherever the cuts fall (inside a CRLF, on a terminator, in a label,
// in the byte-order mark).
func TestShardsReadEveryLineOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for trial := range 20 {
		var b strings.Builder
		if trial%2 == 0 {
			b.WriteString("\xEF\xBB\xBF")
		}
		for i := range 40 {
			switch rng.IntN(5) {
			case 0:
				b.WriteString("# comment")
			case 1:
			default:
				fmt.Fprintf(&b, "a%d,b%d", rng.IntN(9), i)
			}
			b.WriteString([]string{"\n", "\r\n", "\r", "\n\n", "\r\r\n"}[rng.IntN(5)])
		}
		if trial%3 == 0 {
			b.WriteString("last line")
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d", trial))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var want []string
		if _, err := graph.ScanPairs(strings.NewReader(b.String()), "x", func(_ int64, a, c []byte, _ bool) error {
			want = append(want, string(a)+" "+string(c))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for sb := int64(1); sb <= int64(b.Len())+1; sb++ {
			var shards []Shard
			if err := (&planShardsFn{ShardBytes: sb}).ProcessElement(context.Background(), path, func(s Shard) { shards = append(shards, s) }); err != nil {
				t.Fatal(err)
			}
			var pairs []Pair
			for _, sh := range shards {
				if err := (&readShardFn{}).ProcessElement(context.Background(), sh, func(p Pair) { pairs = append(pairs, p) }); err != nil {
					t.Fatalf("shard bytes %d: %v", sb, err)
				}
			}
			slices.SortFunc(pairs, func(x, y Pair) int { return int(x.Pos - y.Pos) })
			got := make([]string, len(pairs))
			for i, p := range pairs {
				got[i] = p.A + " " + p.B
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, shards of %d bytes:\n got  %q\n want %q", trial, sb, got, want)
			}
		}
	}
}
