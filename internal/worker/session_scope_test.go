package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sessionRecorder is a backend that records the session key each job ran
// in (a backend keeps one session per key).
type sessionRecorder struct {
	mu   sync.Mutex
	keys map[string]string // job id -> session key
}

func (r *sessionRecorder) Kind() string                   { return "recorder" }
func (r *sessionRecorder) Validate(context.Context) error { return nil }
func (r *sessionRecorder) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, PersistentSessions: true}
}
func (r *sessionRecorder) Run(_ context.Context, spec backends.Spec, _ backends.Output) (backends.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[spec.JobID] = spec.Session
	return backends.Result{}, nil
}

// Session keys are scoped to the submitting identity: two owners who pick
// the same key never share a session.
func TestSessionKeysScopedToTheOwner(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rec := &sessionRecorder{keys: map[string]string{}}
	reg := backends.NewRegistry()
	if err := reg.Add("local", rec); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	for id, owner := range map[string]string{"s-alice": "subagent.alice", "s-bob": "manual.bob"} {
		if _, err := e.c.As(owner).Submit(e.ctx, jobs.Spec{ID: id, Command: "true", Session: "shared"}); err != nil {
			t.Fatal(err)
		}
		sandruntest.WaitResult(t, e.c, id, 30*time.Second)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if a, b := rec.keys["s-alice"], rec.keys["s-bob"]; a == b || a != "subagent.alice.shared" || b != "manual.bob.shared" {
		t.Fatalf("session keys %q and %q: want one per owner", a, b)
	}
}
