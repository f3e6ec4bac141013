//go:build race

package gcn

// raceEnabled skips the dataset tests, which are too slow under the race
// detector.
const raceEnabled = true
