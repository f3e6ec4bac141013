package graph

import (
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
)

// labelIndex maps labels back to node ids. It is built once, when the graph
// is constructed, and never changes.
//
// Labels that are the decimal ids (no label table, or labels[i] is the
// decimal form of i for every i, as for most generated graphs) need no index
// at all: ID parses the label. Other label tables get an open-addressing hash
// table of ids with linear probing, at most two thirds full: 4 bytes per slot,
// about 8 bytes per node (80 MB for 10 M nodes, against several hundred MB
// for a map[string]int32), and a lookup hashes the label once and compares
// it with the labels of the ids it probes.
type labelIndex struct {
	decimal bool // labels are the decimal ids: no table
	seed    maphash.Seed
	slots   []int32 // id+1, 0 for an empty slot; the length is a power of two
}

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
	// At most two thirds full, so that probe sequences stay short.
	size := 1 << bits.Len(uint(len(labels)+len(labels)/2))
	x := labelIndex{seed: maphash.MakeSeed(), slots: make([]int32, size)}
	mask := uint64(size - 1)
	for i, l := range labels {
		for h := maphash.String(x.seed, l) & mask; ; h = (h + 1) & mask {
			s := x.slots[h]
			if s == 0 {
				x.slots[h] = int32(i) + 1
				break
			}
			if labels[s-1] == l {
				return labelIndex{}, duplicateError(labels, int(s-1), i)
			}
		}
	}
	return x, nil
}

// lookup returns the id of label.
func (x *labelIndex) lookup(labels []string, label string) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, label) & mask; ; h = (h + 1) & mask {
		s := x.slots[h]
		if s == 0 {
			return 0, false
		}
		if labels[s-1] == label {
			return s - 1, true
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

// decimalID is the node id whose decimal form is label, on n nodes.
func decimalID(label string, n int) (int32, bool) {
	id, err := strconv.Atoi(label)
	if err != nil || id < 0 || id >= n || strconv.Itoa(id) != label {
		return 0, false
	}
	return int32(id), true
}
