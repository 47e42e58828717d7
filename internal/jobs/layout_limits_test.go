package jobs_test

import (
	"testing"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestOutputsStreamHasAByteLimit: the OUTPUTS stream is bounded, so job
// output cannot fill JetStream's storage.
func TestOutputsStreamHasAByteLimit(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	info, err := st.JS.Stream(ctx, jobs.StreamOutputs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	want := (jobs.LayoutConfig{}).WithDefaults().MaxOutputBytes
	if cfg.MaxBytes != want {
		t.Fatalf("OUTPUTS MaxBytes %d, want %d", cfg.MaxBytes, want)
	}
}
