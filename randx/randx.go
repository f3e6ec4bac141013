// Package randx makes the random sources dplp passes down explicitly
// (privacy-model §7): seeded generators for reproducible experiments and
// crypto-seeded generators for anything meant for deployment.
package randx

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Source describes how a generator was seeded, for announcing in outputs.
type Source struct {
	Seeded bool
	Seed   uint64
}

// String is the announcement printed by commands.
func (s Source) String() string {
	if s.Seeded {
		return fmt.Sprintf("seeded generator (seed %d): reproducible, NOT for deployment", s.Seed)
	}
	return "crypto-seeded generator"
}

// Seeded returns a ChaCha8 generator determined by seed.
func Seeded(seed uint64) *rand.Rand {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], 0x6470_6c70_7365_6564) // "dplpseed": domain separation
	return rand.New(rand.NewChaCha8(key))
}

// Crypto returns a ChaCha8 generator keyed from crypto/rand.
func Crypto() *rand.Rand {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		// crypto/rand.Read never fails on supported platforms (Go >= 1.24 panics internally instead).
		panic("randx: crypto/rand failed: " + err.Error())
	}
	return rand.New(rand.NewChaCha8(key))
}

// New returns Seeded(*seed) when seed is non-nil and Crypto otherwise, with
// the matching Source.
func New(seed *uint64) (*rand.Rand, Source) {
	if seed != nil {
		return Seeded(*seed), Source{Seeded: true, Seed: *seed}
	}
	return Crypto(), Source{}
}

// Derive returns an independent seeded generator for stream i of a seeded
// run (for example one per worker or per experiment cell), so parallel work
// stays reproducible regardless of scheduling.
func Derive(seed uint64, stream ...uint64) *rand.Rand {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, s := range stream {
		h = splitmix(h ^ splitmix(s+0x632be59bd9b4e019))
	}
	return Seeded(splitmix(h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
