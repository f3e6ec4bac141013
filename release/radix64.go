package release

import "slices"

// sortByID sorts packed keys id<<32 | position by their id half (ids are
// distinct, so the order is total) with a least-significant-digit radix
// sort in 11-bit digits over the id's significant bits, using *tmp as
// scratch; it returns the sorted slice (keys or the scratch). A seeded
// release puts every user's candidates in id order this way (so the list
// does not depend on the scorer's enumeration order): two or three linear
// passes instead of a comparison sort, which took nearly half the CPU of a
// seeded release. Short lists are sorted by comparisons.
func sortByID(keys []uint64, tmp *[]uint64) []uint64 {
	if len(keys) < 256 {
		slices.Sort(keys)
		return keys
	}
	var top uint64
	for _, k := range keys {
		top |= k >> 32
	}
	if cap(*tmp) < len(keys) {
		*tmp = make([]uint64, len(keys))
	}
	const bits = 11
	src, dst := keys, (*tmp)[:len(keys)]
	for shift := uint(32); shift < 64 && top>>(shift-32) != 0; shift += bits {
		var count [1 << bits]int
		for _, k := range src {
			count[(k>>shift)&(1<<bits-1)]++
		}
		sum := 0
		for d := range count {
			count[d], sum = sum, sum+count[d]
		}
		for _, k := range src {
			d := (k >> shift) & (1<<bits - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	return src
}

// candOrder is the order a release visits candidates in: positions
// 0..len(cands)-1 as given, or, when canonical, sorted by candidate id
// (sortByID on (id, position) words). It appends to idx and returns it;
// o keeps the radix buffers between users.
type candOrder struct {
	keys, tmp []uint64
}

func (o *candOrder) order(cands []int32, canonical bool, idx []int) []int {
	if !canonical {
		for i := range cands {
			idx = append(idx, i)
		}
		return idx
	}
	o.keys = o.keys[:0]
	for i, v := range cands {
		o.keys = append(o.keys, uint64(uint32(v))<<32|uint64(i))
	}
	sorted := sortByID(o.keys, &o.tmp)
	if len(sorted) > 0 && &sorted[0] != &o.keys[0] {
		o.keys, o.tmp = sorted, o.keys
	}
	for _, key := range o.keys {
		idx = append(idx, int(uint32(key)))
	}
	return idx
}
