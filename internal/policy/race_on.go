//go:build race

package policy

// raceSlowdown scales the decision deadline in binaries built with the
// race detector (tests), which run the detector about ten times slower:
// the deadline bounds a decision's cost, the step and byte budgets stay
// the same, so a verdict does not change with -race.
const raceSlowdown = 10
