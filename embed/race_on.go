//go:build race

package embed

// raceEnabled serialises Hogwild training under the race detector.
const raceEnabled = true

// RaceEnabled tells Hogwild trainers in other packages to run one worker
// under the race detector, whose reports their deliberate races would be.
const RaceEnabled = raceEnabled
