//go:build !race

package line

const raceEnabled = false
