//go:build race

package synth

// raceDetector: the race detector allocates beside the code it watches (per goroutine
// and per synchronization), which a measurement of Solve's allocations would count.
const raceDetector = true
