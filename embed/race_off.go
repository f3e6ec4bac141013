//go:build !race

package embed

const raceEnabled = false

// RaceEnabled tells Hogwild trainers in other packages to run one worker
// under the race detector, whose reports their deliberate races would be.
const RaceEnabled = raceEnabled
