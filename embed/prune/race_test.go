//go:build race

package prune

// raceEnabled skips the dataset tests, which are too slow under the race
// detector.
const raceEnabled = true
