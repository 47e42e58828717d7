package policy

import (
	"runtime"
	"testing"
	"time"
	"os"
)

func TestAdvProbe(t *testing.T) {
	e := newEngine(t, DefaultConfig())
	only := os.Getenv("FAM")
	for _, fam := range adversarialFamilies {
		if only != "" && fam.name != only { continue }
		for _, n := range []int{4 << 10, 32 << 10, maxCommandLen} {
			cmd := fam.gen(n)
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			t0 := time.Now()
			d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeDeny})
			el := time.Since(t0)
			runtime.ReadMemStats(&ms1)
			r := d.Reason
			if len(r) > 150 { r = r[:150] }
			t.Logf("%-24s n=%6d len=%6d %10v %8.1fMB matches=%d %s", fam.name, n, len(cmd), el, float64(ms1.TotalAlloc-ms0.TotalAlloc)/1e6, len(d.Matches), r)
		}
	}
}
