package graph

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// pairLine is one call of a pairs scanner's fn.
type pairLine struct {
	a, b  string
	extra bool
}

// ScanPairsParallel gives what ScanPairs gives, for any block size: the
// pairs merged in file order, the same line count, and the same error (the
// first bad line of the file, a syntax error or fn's, wrapped alike), with
// comments, blank lines, CR/CRLF line ends, a byte-order mark, extra
// columns, an fn that fails on a token, and a read error mid-stream.
func TestScanPairsParallelMatchesSerial(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var sb strings.Builder
		if rapid.Bool().Draw(t, "bom") {
			sb.WriteString("\xEF\xBB\xBF")
		}
		for range rapid.IntRange(0, 60).Draw(t, "lines") {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				sb.WriteString("# a comment")
			case 1:
				// blank
			case 2:
				sb.WriteString("7 8 0.5")
			case 3:
				if rapid.IntRange(0, 3).Draw(t, "bad") == 0 {
					sb.WriteString("lonely") // one field: a syntax error
				} else {
					sb.WriteString("x y")
				}
			case 4:
				sb.WriteString("boom 1") // fn refuses it
			default:
				fmt.Fprintf(&sb, "%d %d", rapid.IntRange(0, 99).Draw(t, "a"), rapid.IntRange(0, 99).Draw(t, "b"))
			}
			sb.WriteString(rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "end"))
		}
		in := sb.String()
		failing := rapid.Bool().Draw(t, "failing") // fn refuses "boom"
		lineErr := rapid.Bool().Draw(t, "lineErr") // ... with a *LineError of its own
		readErr := rapid.Bool().Draw(t, "readErr") // the reader fails after the input
		bs := rapid.SampledFrom([]int{1, 5, 17, 64, 4 << 20}).Draw(t, "block")
		check := func(a []byte) error {
			if failing && string(a) == "boom" {
				if lineErr {
					return &LineError{"elsewhere", 42, "boom"}
				}
				return errors.New("boom refused")
			}
			return nil
		}
		reader := func() io.Reader {
			if readErr {
				return io.MultiReader(strings.NewReader(in), iotest.ErrReader(errors.New("disk on fire")))
			}
			return strings.NewReader(in)
		}
		withBlockSize(bs, func() {
			var want []pairLine
			wn, werr := ScanPairs(reader(), "m.txt", func(_ int64, a, b []byte, extra bool) error {
				if err := check(a); err != nil {
					return err
				}
				want = append(want, pairLine{string(a), string(b), extra})
				return nil
			})
			var got []pairLine
			gn, gerr := ScanPairsParallel(reader(), "m.txt", func(acc *[]pairLine, a, b []byte, extra bool) error {
				if err := check(a); err != nil {
					return err
				}
				*acc = append(*acc, pairLine{string(a), string(b), extra})
				return nil
			}, func(acc *[]pairLine) { got = append(got, *acc...) })
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || gn != wn {
				t.Fatalf("block %d: got %d lines, error %v; want %d, %v", bs, gn, gerr, wn, werr)
			}
			var gle, wle *LineError
			if errors.As(gerr, &gle) != errors.As(werr, &wle) {
				t.Fatalf("block %d: error types differ: %T, %T", bs, gerr, werr)
			}
			if werr == nil && !slices.Equal(got, want) {
				t.Fatalf("block %d: got %v, want %v", bs, got, want)
			}
			if werr != nil && !slices.Equal(got, want[:min(len(got), len(want))]) {
				t.Fatalf("block %d: merged %v past the error, serial %v", bs, got, want)
			}
		})
	})
}
