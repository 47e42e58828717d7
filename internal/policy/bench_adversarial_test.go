package policy

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDecideAdversarial measures one decision on each adversarial
// family at the spec's command limit (128 KiB): the worst case of time
// (ns/op) and heap (B/op) the budget allows. Run it with:
// go test -run '^$' -bench DecideAdversarial -benchmem ./internal/policy/
func BenchmarkDecideAdversarial(b *testing.B) {
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, fam := range adversarialFamilies {
		req := Request{Command: fam.gen(maxCommandLen), Origin: "manual", Mode: ModeDeny}
		b.Run(fam.name, func(b *testing.B) {
			var peak uint64 // measured on one decision, apart from the timed ones
			runtime.GC()
			stop := samplePeakHeap(&peak)
			e.Decide(req)
			stop()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if d := e.Decide(req); d.Allow && d.Dangerous {
					b.Fatalf("dangerous command allowed in deny mode: %s", d.Reason)
				}
			}
			b.ReportMetric(float64(peak), "peak-heap-B")
		})
	}
}

// samplePeakHeap samples the live heap every 100 µs until stop is called,
// and raises *peak to the most seen above the heap at the start: the peak
// memory of what runs meanwhile (runtime/metrics reads do not stop the
// world). The returned stop waits for the sampler.
func samplePeakHeap(peak *uint64) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for !done.Load() {
			if v := read(); v > base && v-base > *peak {
				*peak = v - base
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return func() { done.Store(true); <-finished }
}
