//go:build !race

package amdgpu

const raceDetector = false
