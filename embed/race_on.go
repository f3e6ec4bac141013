//go:build race

package embed

// raceEnabled serialises Hogwild training under the race detector.
const raceEnabled = true
