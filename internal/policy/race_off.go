//go:build !race

package policy

// raceSlowdown: see race_on.go.
const raceSlowdown = 1
