package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// countingPulls wraps the real engine and counts pulls; no registry is
// reachable here, so each pull is made to fail after a pause, the way an
// unreachable registry does.
type countingPulls struct {
	engine
	pulls atomic.Int32
}

var errNoRegistry = errors.New("no registry reachable")

func (c *countingPulls) ImagePull(ctx context.Context, _ string, _ client.ImagePullOptions) (client.ImagePullResponse, error) {
	c.pulls.Add(1)
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil, errNoRegistry
}

func TestPullPolicies(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	run := func(dd *Docker) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := dd.Run(ctx, backends.Spec{JobID: "pull", Command: "true"}, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
		return err
	}
	// if-not-present with the image there: no pull.
	present := &countingPulls{engine: d.api}
	withPresent, err := New(Config{Image: d.cfg.Image})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = withPresent.Close() })
	withPresent.api = present
	if err := run(withPresent); err != nil || present.pulls.Load() != 0 {
		t.Fatalf("if-not-present, image present: err %v, %d pulls", err, present.pulls.Load())
	}
	// never with the image missing: a permanent error naming the image.
	never, err := New(Config{Image: "sandrun-test/missing:0", Pull: PullNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = never.Close() })
	if err := run(never); !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "sandrun-test/missing:0") {
		t.Fatalf("never, image missing: %v", err)
	}
	// Ten concurrent jobs of a missing image: one pull, one shared outcome.
	missing, err := New(Config{Image: "sandrun-test/missing:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = missing.Close() })
	counter := &countingPulls{engine: missing.api}
	missing.api = counter
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() { errs <- run(missing) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, errNoRegistry) || !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("job of a missing image: %v", err)
		}
	}
	if n := counter.pulls.Load(); n != 1 {
		t.Fatalf("%d pulls for 10 concurrent jobs, want 1", n)
	}
	if _, err := New(Config{Image: "x", Pull: "sometimes"}); err == nil || !strings.HasPrefix(err.Error(), "pull:") {
		t.Fatalf("bad pull policy: %v", err)
	}
}
