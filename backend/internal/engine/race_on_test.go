//go:build race

package engine

// raceDetector: the tests run under -race, which makes the engine several times slower.
const raceDetector = true
