package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// startCancel is the engine ending the run's context as soon as the
// container has started: a job cancelled in its container's first moments.
type startCancel struct {
	engine
	cancel context.CancelFunc
}

func (e *startCancel) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	res, err := e.engine.ContainerStart(ctx, id, o)
	e.cancel()
	return res, err
}

// lossyEngine is startCancel with a PID 1 that has no SIGTERM handler
// yet: the first SIGTERM sent to a container is lost.
type lossyEngine struct {
	startCancel
	mu    sync.Mutex
	terms int
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
// SIGTERM within its grace, not by SIGKILL after it, when the worker
// cannot watch the container's init (its processes are not in procRoot).
func TestStopRepeatsTermForAYoungContainer(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	d.procRoot = t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	e := &lossyEngine{startCancel: startCancel{engine: d.api, cancel: cancel}}
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

// watchedEngine is startCancel noting, at each SIGTERM, whether the
// container's PID 1 had started its child yet.
type watchedEngine struct {
	startCancel
	mu    sync.Mutex
	terms []bool // per SIGTERM: PID 1 had a child
}

func (e *watchedEngine) ContainerKill(ctx context.Context, id string, o client.ContainerKillOptions) (client.ContainerKillResult, error) {
	if o.Signal == "SIGTERM" {
		ready := false
		if info, err := e.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil && info.Container.State != nil {
			pid := strconv.Itoa(info.Container.State.Pid)
			b, err := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
			ready = err == nil && len(strings.TrimSpace(string(b))) > 0
		}
		e.mu.Lock()
		e.terms = append(e.terms, ready)
		e.mu.Unlock()
	}
	return e.engine.ContainerKill(ctx, id, o)
}

// TestStopWaitsForInit: a job cancelled the moment its container started
// gets one SIGTERM, sent once the container's init has started the
// command (before that, the init would lose it), and ends by it.
func TestStopWaitsForInit(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		d := newTestBackend(t)
		ctx, cancel := context.WithCancel(t.Context())
		e := &watchedEngine{startCancel: startCancel{engine: d.api, cancel: cancel}}
		d.api = e
		spec := backends.Spec{JobID: "init", Attempt: i + 1, Command: "exec sleep 300", KillGrace: 2 * time.Minute}
		res, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error %v, want one wrapping context.Canceled", err)
		}
		e.mu.Lock()
		terms := e.terms
		e.mu.Unlock()
		if res.Signal != "SIGTERM" || len(terms) != 1 || !terms[0] {
			t.Fatalf("run %d: signal %q; SIGTERMs sent (true: PID 1 had its child) %v; want one, after the init was ready, ending the job", i, res.Signal, terms)
		}
	}
}
