// Package mech turns one query's utility vector into an ordered top-K list
// of recommended candidates, privately or not, and computes the exact output
// probabilities that the privacy audit compares between neighbouring graphs.
//
// A query's utilities are a Utilities value: individual candidates plus
// blocks of candidates that share one value (typically the thousands of
// candidates with common-neighbour score 0). Every mechanism handles a block
// of m candidates in O(min(K, m)) time by drawing only the order statistics
// it needs, so a query costs O(#individual candidates + #blocks + K log K)
// rather than O(#candidates). Picks are indices into the virtual list
// [individuals..., block 0 members..., block 1 members..., ...].
//
// Randomness comes only from the *rand.Rand passed in. Invalid arguments
// (k < 1, negative or non-finite noise parameters, NaN or infinite
// utilities, negative block sizes) are reported as errors wrapping
// ErrInvalid. If k exceeds the number of candidates, all of them are
// returned in mechanism order.
//
// Mechanisms and their guarantees (Delta is the utility sensitivity: the
// largest change of any candidate's utility between neighbouring graphs):
//
//   - ExpTopK (the paper's mechanism). K rounds of the exponential mechanism
//     without replacement, each picking a remaining candidate with
//     probability proportional to exp(q/scale). It is sampled as "add
//     Gumbel(scale) noise to every utility, keep the K largest", which gives
//     exactly the same distribution over ordered lists. With
//     scale = 2*Delta/eps_p, each round is eps_p-DP for any utilities, so the
//     list costs K*eps_p. With scale 0 it is the exact top-K, which is 0-DP
//     when Delta is 0, because the utilities then cannot change.
//   - ExactTopK. The non-private top-K, with ties broken uniformly at random.
//     It has no privacy guarantee unless Delta is 0.
//   - LaplacePeel. Report-noisy-max peeling: K rounds, each adding fresh
//     Laplace(scale) noise to the remaining candidates and taking the
//     maximum. Report-noisy-max with Laplace(2*Delta/eps) noise is eps-DP
//     for any utilities, so with scale = 2*Delta/eps_p the list costs
//     K*eps_p.
//   - LaplaceTopK and StaircaseTopK (the paper's baselines). Noise is added
//     once to every utility and the K largest are kept: Laplace(scale) with
//     the paper's scale = Delta/eps_p, or the staircase distribution of Geng
//     & Viswanath (Algorithm 1, with step Delta and the variance-optimal
//     gamma from OptimalGamma; ReferenceGamma reproduces the reference
//     code's approximate gamma). For K = 1 these are report-noisy-max, which
//     is eps-DP for any utilities when the noise is calibrated to 2*Delta
//     (Laplace scale 2*Delta/eps; staircase step 2*Delta). At the paper's
//     calibration to Delta they are only 2*eps-DP in general (eps for
//     monotone utilities). For K > 1 the paper gives no analysis, and no
//     pure-DP guarantee is claimed here.
//   - NoisyTopK is the general one-shot "add i.i.d. noise, keep the top K"
//     mechanism behind both baselines.
//
// Exact probabilities for the audit:
//
//   - ExpListLogProb gives the log probability of an ordered list under
//     ExpTopK (paper Eq. exp-mech-iterative), or under exact top-K with
//     uniform tie-breaking when the scale is 0.
//   - SelectProbs gives the probability that each candidate wins
//     report-noisy-max (K = 1) under Laplace or staircase noise. It is
//     computed by piecewise Gauss-Legendre quadrature with exact or bounded
//     tails, to about 1e-12 relative accuracy.
//   - ChiSquare is Pearson's goodness-of-fit test, used to check samplers
//     against these exact probabilities.
//
// Limitations: noise is generated with floating-point arithmetic (Gumbel as
// -ln of an exponential variate, Laplace and staircase from ziggurat
// exponentials and uniform floats). Such textbook samplers have known
// floating-point weaknesses (Mironov 2012; Ilvento 2020), and no exact
// sampler is provided. Ties between noisy values are a measure-zero event
// and are broken arbitrarily, except in the exact (zero-noise) mode.
package mech
