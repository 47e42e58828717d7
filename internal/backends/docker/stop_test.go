package docker

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// lossyEngine is the engine with a PID 1 that has no SIGTERM handler yet:
// the first SIGTERM sent to a container is lost. It ends the run's
// context as soon as the container has started.
type lossyEngine struct {
	engine
	cancel context.CancelFunc
	mu     sync.Mutex
	terms  int
}

func (e *lossyEngine) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	res, err := e.engine.ContainerStart(ctx, id, o)
	e.cancel()
	return res, err
}

func (e *lossyEngine) ContainerKill(ctx context.Context, id string, o client.ContainerKillOptions) (client.ContainerKillResult, error) {
	if o.Signal == "SIGTERM" {
		e.mu.Lock()
		e.terms++
		lost := e.terms == 1
		e.mu.Unlock()
		if lost {
			return client.ContainerKillResult{}, nil
		}
	}
	return e.engine.ContainerKill(ctx, id, o)
}

// TestStopRepeatsTermForAYoungContainer: a job cancelled in its
// container's first moments, whose first SIGTERM is lost, still ends by
// SIGTERM within its grace, not by SIGKILL after it.
func TestStopRepeatsTermForAYoungContainer(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e := &lossyEngine{engine: d.api, cancel: cancel}
	d.api = e
	spec := backends.Spec{JobID: "young", Attempt: 1, Command: "echo ready; exec sleep 300", KillGrace: 2 * time.Minute}
	res, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error %v, want one wrapping context.Canceled", err)
	}
	e.mu.Lock()
	terms := e.terms
	e.mu.Unlock()
	if res.Signal != "SIGTERM" || terms != 2 {
		t.Fatalf("signal %q after %d SIGTERMs; want the job ended by the second SIGTERM", res.Signal, terms)
	}
}
