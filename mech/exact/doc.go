// Package exact is an exact implementation of the exponential mechanism
// (top-K by K picks without replacement) for privacy-grade sampling: the
// base-2 exponential mechanism of Ilvento (2020, "Implementing the
// exponential mechanism with base-2 differential privacy"), which avoids
// the floating-point leaks of textbook samplers (Mironov 2012).
//
//   - Utilities are put once on a power-of-two grid g = 2^e <= Delta/2^k
//     (n = floor(u/g), exactly from the float's bits). Rounding moves the
//     sensitivity from Delta to Dg = ceil(Delta/g) grid units, at most
//     Delta*(1 + 2^-k) in utility units; the privacy charge uses Dg.
//   - Candidate i is picked with probability proportional to b^(-n_i), with
//     base b = X/2^64 a dyadic rational (eta = -log2 b); every pick is
//     EpsPerPick = 2*Dg*ln(1/b)-DP, an exact rational upper bound <= the
//     requested eps (New chooses X).
//   - Sampling uses only uniform bits from an io.Reader and integer
//     arithmetic (rejection from a dyadic envelope, Bernoulli draws decided
//     against rigorous fixed-point or big.Float enclosures of dyadic
//     rationals); ListProb gives the exact probability of any ordered list
//     as a *big.Rat. No float64 enters a probability computation (a go/ast
//     test checks the sampling path).
//
// Input and output mirror package mech: a *mech.Utilities (individual
// values plus blocks of equal values) and picks indexing the virtual
// concatenation [Vals..., block members...], so the sampler can replace
// mech.ExpTopK. See docs/SAMPLING.md.
package exact
