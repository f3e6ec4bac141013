//go:build !race

package prune

const raceEnabled = false
