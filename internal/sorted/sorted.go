// Package sorted holds set operations on ascending, duplicate-free int32
// slices (node ids, neighbour lists), shared by the library and the
// research harness.
package sorted

// Minus returns a \ b, both ascending and without duplicates, written into
// dst[:0] (dst may be nil; it must not overlap a or b unless it is a's
// prefix storage). It runs in O(len(a) + len(b)).
func Minus(dst, a, b []int32) []int32 {
	dst = dst[:0]
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			dst = append(dst, x)
		}
	}
	return dst
}
