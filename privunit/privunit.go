// Package privunit names the privacy unit of a guarantee: what two
// neighbouring graphs may differ in (docs/privacy-model.md §2 and §16).
//
//   - Party (the default, paper Definition 1): for query u, G and G' differ
//     only in pairs {w, x}, x in prot(w) \ {u}, of ONE node w != u; any
//     subset of those pairs may be toggled.
//   - Pair: G and G' differ in ONE protected pair {a, b} with a, b != u.
//
// In both units every pair incident to u, every non-protected pair and the
// marks are invariant (§2). A party-unit eps-DP release is pair-unit
// eps-DP (a single pair is a subset of one party's pairs); conversely, by
// group privacy a pair-unit eps-DP release is (m x eps)-DP for a party
// with m toggleable pairs (§16).
package privunit

import (
	"fmt"
	"strings"
)

// Unit is a privacy unit. The zero value is Party, the default.
type Unit int

// The privacy units.
const (
	Party Unit = iota // Definition 1: any subset of one party's protected pairs
	Pair              // one protected pair
)

// String is the name Parse accepts: "party" or "pair".
func (u Unit) String() string {
	switch u {
	case Party:
		return "party"
	case Pair:
		return "pair"
	}
	return fmt.Sprintf("Unit(%d)", int(u))
}

// Valid reports whether u is Party or Pair.
func (u Unit) Valid() bool { return u == Party || u == Pair }

// Parse parses "party" or "pair" (any case, surrounding spaces ignored);
// "" is Party.
func Parse(s string) (Unit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "party":
		return Party, nil
	case "pair":
		return Pair, nil
	}
	return 0, fmt.Errorf("privunit: unknown privacy unit %q (want party or pair)", s)
}

// Guarantee is the one-line description of the unit for output headers.
func (u Unit) Guarantee() string {
	switch u {
	case Pair:
		return "pair unit: neighbouring graphs differ in one protected pair not incident to the query; a party with m protected pairs gets m x eps (group privacy)"
	case Party:
		return "party unit (Definition 1): neighbouring graphs differ in any subset of one party's protected pairs not incident to the query"
	}
	return u.String()
}

// GroupCost is the party-unit cost implied by a pair-unit cost eps for a
// party with m toggleable pairs (group privacy: m x eps; 0 when m = 0).
func GroupCost(eps float64, m int) float64 {
	if m <= 0 {
		return 0
	}
	return float64(m) * eps
}
