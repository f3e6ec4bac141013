//go:build race

package line

// raceEnabled: Hogwild runs (Workers > 1) race by design, so tests use one
// worker under the race detector.
const raceEnabled = true
