//go:build race

package amdgpu

// raceDetector: the race detector's shadow memory grows with the work a
// test does, so memory-growth checks run without it (make test does both).
const raceDetector = true
