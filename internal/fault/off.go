//go:build !olfault

// Package fault lets a test make the runtime panic at a chosen point: the
// points are the places right after a lock is taken (and its release
// deferred) in impl/ and plugins/, so that a test can prove no panic
// leaves a lock held (RATIONALE.md, "Why is every lock released by
// defer?"). Only a build with the olfault tag can fire them; in every
// other build Point is empty and inlined away.
package fault

// Point marks a place where a test may inject a panic (none in this build).
func Point() {}
