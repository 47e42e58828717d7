package worker_test

import (
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// counterValue sums a metric family's samples on w's registry.
func counterValue(t *testing.T, w *sandruntest.Worker, name string) float64 {
	t.Helper()
	mfs, err := w.Metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
	}
	return sum
}
