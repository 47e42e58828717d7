package policy

import (
	"runtime"
	"testing"
	"time"
)

// maxDecisionAlloc is the heap one decision may allocate, whatever the
// command: a generous cap over the budget (budgetBytes counts what the
// detector builds, not every allocation the parser makes).
const maxDecisionAlloc = 256 << 20

// TestAdversarial runs every adversarial family at sizes up to the spec's
// command limit. Each Decide returns a coherent decision (refused
// too-complex or judged); the detector's counters stay within the budget
// and one decision allocates less than maxDecisionAlloc. Time and heap are
// logged, never asserted.
//
// Not parallel: runtime.MemStats counts the allocations of every
// goroutine, so the heap of one decision is only measurable alone.
func TestAdversarial(t *testing.T) {
	e := newEngine(t, DefaultConfig())
	sizes := []int{4 << 10, 32 << 10, maxCommandLen}
	if testing.Short() {
		sizes = sizes[:1]
	}
	for _, fam := range adversarialFamilies {
		for _, n := range sizes {
			cmd := fam.gen(n)
			if len(cmd) > maxCommandLen {
				t.Fatalf("%s(%d) is %d bytes, past the command limit", fam.name, n, len(cmd))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeDeny})
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			checkDecision(t, cmd, d)
			alloc := after.TotalAlloc - before.TotalAlloc
			if alloc > maxDecisionAlloc {
				t.Errorf("%s(%d): one decision allocated %d MiB, cap %d MiB", fam.name, len(cmd), alloc>>20, maxDecisionAlloc>>20)
			}
			b := defaultBudget()
			_, m := metered(cmd, b)
			if m.steps > b.steps || m.bytes > b.bytes {
				t.Errorf("%s(%d): counted %d steps, %d bytes: past the budget", fam.name, len(cmd), m.steps, m.bytes)
			}
			t.Logf("%-24s %6d B  %10v  %7.1f MiB  %7d steps %7.1f MiB counted  rule %q", fam.name, len(cmd), elapsed.Round(time.Microsecond),
				float64(alloc)/(1<<20), m.steps, float64(m.bytes)/(1<<20), d.Rule)
		}
	}
}
