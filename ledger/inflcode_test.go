package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// inflIDsGen draws a sorted set of distinct ids in [1, 2^62]: dense runs,
// small gaps, huge gaps and the extremes, so that every low-bit width the
// encoder can pick is exercised.
func inflIDsGen() *rapid.Generator[[]int64] {
	return rapid.Custom(func(t *rapid.T) []int64 {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		scale := rapid.SampledFrom([]int64{1, 2, 30, 1000, 1 << 20, 1 << 40, 1 << 55}).Draw(t, "scale")
		ids := make([]int64, 0, n)
		next := int64(0)
		for range n {
			gap := 1 + rapid.Int64Range(0, scale).Draw(t, "gap")
			if next > maxInflID-gap {
				break
			}
			next += gap
			ids = append(ids, next)
		}
		if rapid.Bool().Draw(t, "top") && (len(ids) == 0 || ids[len(ids)-1] < maxInflID) {
			ids = append(ids, maxInflID) // the largest id allowed
		}
		return ids
	})
}

// Both formats round-trip every set, their sizes are predicted exactly, a
// schema-9 store writes the shorter, and both are canonical: any strict
// prefix, any extension and any single-bit change either fails to decode
// (with an error wrapping errBadInflSet) or decodes to a different set.
func TestInflSetProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := inflIDsGen().Draw(t, "ids")
		star := rapid.Bool().Draw(t, "star")
		v8, ef := appendInflSetV8(nil, ids, star), appendInflSetEF(nil, ids, star)
		if len(v8) != v8BlobSize(ids, star) || len(ids) > 0 && len(ef) != efBlobSize(ids, star) {
			t.Fatalf("%v: sizes %d, %d; predicted %d, %d", ids, len(v8), len(ef), v8BlobSize(ids, star), efBlobSize(ids, star))
		}
		// At schema 9 the shorter format is written (schema 8's on a tie).
		want := v8
		if len(ids) > 0 && len(ef) < len(v8) {
			want = ef
		}
		if chosen := appendInflSet(nil, ids, star, true); !bytes.Equal(chosen, want) {
			t.Fatalf("%v: wrote %x, v8 %x, ef %x", ids, chosen, v8, ef)
		}
		if !bytes.Equal(appendInflSet(nil, ids, star, false), v8) {
			t.Fatalf("%v: schema 8 store wrote another format", ids)
		}
		if inflSetSize(ids, star, true) != len(want) || inflSetSize(ids, star, false) != len(v8) {
			t.Fatalf("%v: inflSetSize %d, %d; written %d, %d", ids, inflSetSize(ids, star, true), inflSetSize(ids, star, false), len(want), len(v8))
		}
		for _, b := range [][]byte{v8, ef} {
			got, gotStar, err := decodeInflSet(b)
			if err != nil || gotStar != star || !slices.Equal(got, ids) {
				t.Fatalf("%v %v: got %v %v %v (blob %x)", ids, star, got, gotStar, err, b)
			}
		}
		if !bytes.HasPrefix(ef, []byte{0x80, 0x00, inflFormatEF}) || bytes.HasPrefix(v8, []byte{0x80, 0x00}) {
			t.Fatalf("markers: %x %x", v8, ef)
		}
		if len(ids) > 0 {
			// No more bits than the textbook width gives.
			top := uint64(ids[len(ids)-1] - 1)
			if bitsUsed := efSize(uint64(len(ids)), efLowBits(len(ids), top), top); bitsUsed > efSize(uint64(len(ids)), lowBitsBound(len(ids), top), top) {
				t.Fatalf("%d bits for %d ids below %d", bitsUsed, len(ids), top)
			}
		}
		for _, b := range [][]byte{v8, ef} {
			cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
			if _, _, err := decodeInflSet(b[:cut]); err == nil {
				t.Fatalf("prefix %x of %x decodes", b[:cut], b)
			}
			ext := append(slices.Clone(b), rapid.Byte().Draw(t, "ext"))
			if _, _, err := decodeInflSet(ext); err == nil {
				t.Fatalf("%x extended decodes", b)
			}
			flip := slices.Clone(b)
			bit := rapid.IntRange(0, 8*len(b)-1).Draw(t, "bit")
			flip[bit/8] ^= 1 << (bit % 8)
			if got, gotStar, err := decodeInflSet(flip); err == nil && gotStar == star && slices.Equal(got, ids) {
				t.Fatalf("bit %d of %x flipped decodes to the same set", bit, b)
			} else if err != nil && !errors.Is(err, errBadInflSet) {
				t.Fatalf("flipped: error %v does not wrap errBadInflSet", err)
			}
		}
	})
}

// lowBitsBound is the textbook Elias-Fano width, ceil(log2(top/n)): the
// encoder's choice is never larger in size.
func lowBitsBound(n int, top uint64) uint {
	l := uint(0)
	for l < 62 && top>>l > uint64(n) {
		l++
	}
	return l
}

// The stored formats are pinned: blobs written by schema-8 stores and by
// this version decode to these sets, and this version writes these bytes.
func TestInflSetGolden(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		ids  []int64
		star bool
		ef   bool
	}{
		{"00", nil, false, false},
		{"01", nil, true, false},
		{"0601017e", []int64{1, 2, 128}, false, false},
		{"038001", []int64{128}, true, false},
		{"800001" + "00", nil, false, true},
		{"800001" + "01", nil, true, true},
		// n 3, largest 128, l 5: lows 0, 1, 31 (bits 0-14), upper
		// vector (bits 15-20) with ones at 0, 1 and 5 (highs 0, 0, 3):
		// 0x20 | 0x7c00 | 0x8000 | 0x10000 | 0x100000.
		{"800001" + "06" + "8001" + "05" + "20fc11", []int64{1, 2, 128}, false, true},
		// One id 128, l 6: low 63 (bits 0-5), upper vector "01" (bits 6-7).
		{"800001" + "03" + "8001" + "06" + "bf", []int64{128}, true, true},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		ids, star, err := decodeInflSet(b)
		if err != nil || star != tc.star || !slices.Equal(ids, tc.ids) {
			t.Errorf("%s: %v %v %v, want %v %v", tc.hex, ids, star, err, tc.ids, tc.star)
		}
		enc := appendInflSetV8(nil, tc.ids, tc.star)
		if tc.ef {
			enc = appendInflSetEF(nil, tc.ids, tc.star)
		}
		if !bytes.Equal(enc, b) {
			t.Errorf("%v %v (ef %v): encoded %x, want %s", tc.ids, tc.star, tc.ef, enc, tc.hex)
		}
	}
	for _, bad := range []string{
		"", "80", "8000", "800002", "800001", "80000102", "8000010280", "800001028001", "80000102800140",
		"800001" + "02" + "01" + "00" + "00", // one id 1, l 0: the upper vector has no one bit
		"800001" + "02" + "01" + "00" + "03", // nonzero padding
		"800001" + "02" + "02" + "00" + "01", // largest 2, but the vector says 1
		"800001" + "8600",                    // non-minimal header
		"800001" + "06" + "800100" + "05" + "20fc11",
		"0402", "040100", "8600", "860001017e", "0601017e00",
	} {
		b, _ := hex.DecodeString(bad)
		if ids, star, err := decodeInflSet(b); err == nil || !errors.Is(err, errBadInflSet) {
			t.Errorf("%q decodes: %v %v %v", bad, ids, star, err)
		}
	}
}

// FuzzDecodeInflSet: the decoder never panics, its errors wrap
// errBadInflSet, and what it accepts is a valid set whose encoding in the
// same format is the input (every accepted blob is canonical).
func FuzzDecodeInflSet(f *testing.F) {
	for _, ids := range [][]int64{nil, {1}, {1, 2, 128}, {5, 1 << 40, maxInflID}} {
		for _, ef := range []bool{false, true} {
			f.Add(appendInflSet(nil, ids, true, ef))
			f.Add(appendInflSet(nil, ids, false, ef))
		}
	}
	f.Add([]byte{0x80, 0x00, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, star, err := decodeInflSet(b)
		if err != nil {
			if !errors.Is(err, errBadInflSet) {
				t.Fatalf("%x: error %v does not wrap errBadInflSet", b, err)
			}
			return
		}
		for i, id := range ids {
			if id < 1 || id > maxInflID || i > 0 && id <= ids[i-1] {
				t.Fatalf("%x: ids %v not strictly increasing in [1, 2^62]", b, ids)
			}
		}
		enc := appendInflSetV8(nil, ids, star)
		if bytes.HasPrefix(b, []byte{0x80, 0x00}) {
			enc = appendInflSetEF(nil, ids, star)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("%x decodes to %v %v, which encodes as %x", b, ids, star, enc)
		}
	})
}

// benchSets returns count releases' influencer labels (about m random
// decimal labels of n parties each, sorted and distinct) and a label cache
// that knows them all, ids assigned in label order.
func benchSets(count, n, m int) ([][]string, *labelCache) {
	rng := rand.New(rand.NewPCG(11, 12))
	labels := make([]string, n)
	for i := range labels {
		labels[i] = strconv.Itoa(i)
	}
	slices.Sort(labels)
	c := &labelCache{}
	ids := map[string]int64{}
	for i, w := range labels {
		ids[w] = int64(i + 1)
	}
	c.learn(ids)
	sets := make([][]string, count)
	for i := range sets {
		s := make([]string, m)
		for j := range s {
			s[j] = labels[rng.IntN(n)]
		}
		slices.Sort(s)
		sets[i] = slices.Compact(s)
	}
	return sets, c
}

// BenchmarkEncodeInfl encodes 600-label sets (of 20,000 parties) as a
// charge does, in both formats; BenchmarkDecodeInfl decodes them.
func BenchmarkEncodeInfl(b *testing.B) {
	sets, c := benchSets(256, 20000, 600)
	for _, ef := range []bool{false, true} {
		b.Run(map[bool]string{false: "uvarint", true: "elias-fano"}[ef], func(b *testing.B) {
			var scratch []int64
			size := 0
			for i := 0; b.Loop(); i++ {
				size += len(encodeInfl(c, sets[i%len(sets)], nil, ef, &scratch))
			}
			b.ReportMetric(float64(size)/float64(b.N), "bytes/set")
		})
	}
}

func BenchmarkDecodeInfl(b *testing.B) {
	sets, c := benchSets(256, 20000, 600)
	for _, ef := range []bool{false, true} {
		blobs := make([][]byte, len(sets))
		for i, s := range sets {
			blobs[i] = encodeInfl(c, s, nil, ef, nil)
		}
		b.Run(map[bool]string{false: "uvarint", true: "elias-fano"}[ef], func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, _, err := decodeInflSet(blobs[i%len(blobs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzDecodeBlockSet: block-coded sets (format 2) decode to non-empty,
// strictly increasing block ids and strictly increasing exclusions, or to
// an error wrapping errBadInflSet; never a panic.
func FuzzDecodeBlockSet(f *testing.F) {
	enc := func(blocks, excl []int64, ef bool) []byte {
		a := appendInflSet(nil, blocks, false, ef)
		out := append([]byte{0x80, 0x00, inflFormatBlocks}, binary.AppendUvarint(nil, uint64(len(a)))...)
		return appendInflSet(append(out, a...), excl, false, ef)
	}
	f.Add(enc([]int64{1}, nil, true))
	f.Add(enc([]int64{3, 9, 1 << 40}, []int64{2, 5}, true))
	f.Add(enc([]int64{7}, []int64{1, 2, 3}, false))
	f.Add([]byte{0x80, 0x00, 0x02, 0x01, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		blocks, excl, err := decodeBlockSet(b)
		if err != nil {
			if !errors.Is(err, errBadInflSet) {
				t.Fatalf("%x: error %v does not wrap errBadInflSet", b, err)
			}
			return
		}
		if len(blocks) == 0 || !slices.IsSorted(blocks) || !slices.IsSorted(excl) {
			t.Fatalf("%x: blocks %v, exclusions %v", b, blocks, excl)
		}
		for i := 1; i < len(blocks); i++ {
			if blocks[i] == blocks[i-1] {
				t.Fatalf("%x: repeated block %d", b, blocks[i])
			}
		}
	})
}

// TestBlockSetRoundTrip: what encodeBlocks writes, decodeBlockSet reads
// back, for any blocks and exclusions.
func TestBlockSetRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := inflIDsGen().Filter(func(ids []int64) bool { return len(ids) > 0 }).Draw(t, "blocks")
		excl := inflIDsGen().Draw(t, "excl")
		a := appendInflSet(nil, blocks, false, true)
		b := append([]byte{0x80, 0x00, inflFormatBlocks}, binary.AppendUvarint(nil, uint64(len(a)))...)
		b = appendInflSet(append(b, a...), excl, false, true)
		gb, ge, err := decodeBlockSet(b)
		if err != nil || !slices.Equal(gb, blocks) || !slices.Equal(ge, excl) && len(ge)+len(excl) > 0 {
			t.Fatalf("%x: %v %v %v, want %v %v", b, gb, ge, err, blocks, excl)
		}
		if cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut"); true {
			if _, _, err := decodeBlockSet(b[:cut]); err == nil {
				t.Fatalf("%x cut at %d decodes", b, cut)
			}
		}
	})
}

// sortSmall sorts like slices.Sort at every length, duplicates included
// (the insertion sort up to 32 ids, slices.Sort beyond).
func TestSortSmall(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfN(rapid.Int64Range(1, 50), 0, 70).Draw(t, "ids")
		want := slices.Sorted(slices.Values(ids))
		sortSmall(ids)
		if !slices.Equal(ids, want) {
			t.Fatalf("got %v, want %v", ids, want)
		}
	})
}

// validUTF8 agrees with utf8.ValidString on any bytes: ASCII, valid
// multi-byte runes, and invalid or truncated sequences anywhere.
func TestValidUTF8(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "7", "\x00", "é", "€", "\xff", "\xe2\x82", "😀", "\x80"}), 0, 12).Draw(t, "parts")
		s := strings.Join(parts, "")
		if got, want := validUTF8(s), utf8.ValidString(s); got != want {
			t.Fatalf("validUTF8(%q) = %v, want %v", s, got, want)
		}
	})
}
