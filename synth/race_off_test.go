//go:build !race

package synth

const raceDetector = false
