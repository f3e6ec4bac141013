package graph

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"unsafe"
)

// labelIndex maps labels back to node ids. It is built once, when the graph
// is constructed, and never changes.
//
// Three forms, cheapest first:
//   - labels that are the decimal ids (no label table, or labels[i] is the
//     decimal form of i for every i) need no index: ID parses the label;
//   - labels that are all canonical decimals (no sign, no leading zero) below
//     2N+1024, in any order (edge lists written by `dplp gen` and most
//     numbered datasets), get a dense table from value to id: 4 bytes per
//     value, no hashing;
//   - other labels get an open-addressing hash table with linear probing, at
//     most 80% full, whose 8-byte slots hold an id and 32 bits of its label's
//     hash: 10-20 bytes per node (134 MB for 10 M nodes, against about 560 MB
//     for a map[string]int32). Probes compare hash bits, so building reads
//     each label once and a lookup compares strings only with the id whose
//     hash bits match.
type labelIndex struct {
	decimal bool    // labels are the decimal ids: no table
	dense   []int32 // dense[v] = id+1 of the label with decimal value v, 0 for none
	seed    maphash.Seed
	slots   []uint64 // hash<<32 | id+1, 0 for an empty slot; the length is a power of two
}

// A hash table slot holds the high 32 bits of the label's hash (tagBits)
// and id+1 (idBits); the low bits of the hash choose the first slot probed.
const (
	idBits  = 1<<32 - 1
	tagBits = ^uint64(idBits)
)

// duplicateError reports two nodes with the same label.
func duplicateError(labels []string, i, j int) error {
	return fmt.Errorf("graph: nodes %d and %d have the same label %q", i, j, labels[i])
}

// newLabelIndex indexes labels (nil: the decimal ids). Labels must be
// distinct: otherwise it returns an error naming the first label (in id order)
// that repeats an earlier one, and the earlier node.
func newLabelIndex(labels []string) (labelIndex, error) {
	if labels == nil || decimalIDs(labels) {
		return labelIndex{decimal: true}, nil
	}
	if limit := 2*len(labels) + 1024; allDecimalBelow(labels, limit) {
		return newDenseIndex(labels)
	}
	// At most 80% full, so that probe sequences stay short.
	size := 1 << bits.Len(uint(len(labels)+len(labels)/4))
	x := labelIndex{seed: maphash.MakeSeed(), slots: make([]uint64, size)}
	mask := uint64(size - 1)
	for i, l := range labels {
		h := maphash.String(x.seed, l)
		for p := h & mask; ; p = (p + 1) & mask {
			s := x.slots[p]
			if s == 0 {
				x.slots[p] = h&tagBits | uint64(i+1)
				break
			}
			if j := int(s&idBits) - 1; s&tagBits == h&tagBits && labels[j] == l {
				return labelIndex{}, duplicateError(labels, j, i)
			}
		}
	}
	return x, nil
}

// allDecimalBelow reports whether every label is a canonical decimal below
// limit.
func allDecimalBelow(labels []string, limit int) bool {
	for _, l := range labels {
		if v, ok := decimalString(l); !ok || int(v) >= limit {
			return false
		}
	}
	return true
}

// newDenseIndex is newLabelIndex for labels that are all canonical decimals
// (allDecimalBelow).
func newDenseIndex(labels []string) (labelIndex, error) {
	top := uint32(0)
	for _, l := range labels {
		v, _ := decimalString(l)
		top = max(top, v)
	}
	dense := make([]int32, top+1)
	for i, l := range labels {
		v, _ := decimalString(l)
		if j := dense[v]; j != 0 {
			return labelIndex{}, duplicateError(labels, int(j-1), i)
		}
		dense[v] = int32(i) + 1
	}
	return labelIndex{dense: dense}, nil
}

// decimalString is decimal (parse.go) on a string.
func decimalString(s string) (uint32, bool) {
	return decimal(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// lookup returns the id of label.
func (x *labelIndex) lookup(labels []string, label string) (int32, bool) {
	if x.dense != nil {
		v, ok := decimalString(label)
		if !ok || int(v) >= len(x.dense) || x.dense[v] == 0 {
			return 0, false
		}
		return x.dense[v] - 1, true
	}
	mask := uint64(len(x.slots) - 1)
	h := maphash.String(x.seed, label)
	for p := h & mask; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s == 0 {
			return 0, false
		}
		if id := int32(s&idBits) - 1; s&tagBits == h&tagBits && labels[id] == label {
			return id, true
		}
	}
}

// decimalIDs reports whether labels[i] is the decimal form of i for every i.
// It stops at the first label that is not, so non-decimal tables cost nothing.
func decimalIDs(labels []string) bool {
	var buf [20]byte
	for i, l := range labels {
		if string(strconv.AppendInt(buf[:0], int64(i), 10)) != l {
			return false
		}
	}
	return true
}

// decimalID is the node id whose decimal form is label, on n nodes. It
// checks the canonical form digit by digit: formatting the id back to
// compare it (strconv.Itoa) made a string per lookup, a quarter of reading
// ten million marks.
func decimalID(label string, n int) (int32, bool) {
	v, ok := decimalString(label)
	if !ok || int64(v) >= int64(n) {
		return 0, false
	}
	return int32(v), true
}
