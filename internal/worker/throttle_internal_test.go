package worker

import "testing"

// A batch's max_parallel binds only below its size: at or above it, every
// item may run at once anyway, and no slot is taken.
func TestBatchLimitBindsBelowTheBatchSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ max, total, want int }{
		{0, 10, 0}, {3, 10, 3}, {10, 10, 0}, {50, 10, 0}, {3, 0, 3},
	} {
		if got := (batchLimit{max: c.max, total: c.total}).bound(); got != c.want {
			t.Errorf("max_parallel %d of %d items: bound %d, want %d", c.max, c.total, got, c.want)
		}
	}
}
