package docker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Pull policies.
const (
	PullIfNotPresent = "if-not-present" // default: pull only a missing image
	PullAlways       = "always"         // pull before every job (a newer image wins)
	PullNever        = "never"          // the image must be on the engine already
)

// puller makes concurrent pulls of one image a single pull.
type puller struct {
	mu       sync.Mutex
	inflight map[string]*pull
}

type pull struct {
	done chan struct{}
	err  error
}

// ensureImage applies the pull policy before a job's container is made.
func (d *Docker) ensureImage(ctx context.Context, ref string) error {
	switch d.cfg.Pull {
	case PullNever, PullIfNotPresent:
		if _, err := d.api.ImageInspect(ctx, ref); err == nil {
			return nil
		} else if !isNotFound(err) {
			return fmt.Errorf("image %s: %w: %w", ref, err, backends.ErrUnavailable)
		}
		if d.cfg.Pull == PullNever {
			return fmt.Errorf("image %s is not on the engine and pull is %q: %w", ref, PullNever, backends.ErrPermanent)
		}
	}
	return d.pulls.do(ctx, ref, func(ctx context.Context) (err error) {
		start := time.Now()
		defer func() {
			result := "ok"
			if err != nil {
				result = "error"
			}
			d.count(func(m *metrics.Metrics) prometheus.Counter {
				return m.ImagePulls.WithLabelValues(d.cfg.Profile, result)
			})
			d.observe(func(m *metrics.Metrics) prometheus.Observer { return m.ImagePullSeconds.WithLabelValues(d.cfg.Profile) }, start)
		}()
		resp, err := d.api.ImagePull(ctx, ref, client.ImagePullOptions{})
		if err != nil {
			return err
		}
		defer func() { _ = resp.Close() }()
		return resp.Wait(ctx)
	})
}

// do runs fetch for ref unless a pull of ref is already running, in which
// case it waits for that one and shares its outcome.
func (p *puller) do(ctx context.Context, ref string, fetch func(context.Context) error) error {
	p.mu.Lock()
	if p.inflight == nil {
		p.inflight = map[string]*pull{}
	}
	if cur := p.inflight[ref]; cur != nil {
		p.mu.Unlock()
		select {
		case <-cur.done:
			return cur.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cur := &pull{done: make(chan struct{})}
	p.inflight[ref] = cur
	p.mu.Unlock()

	// The pull serves every waiter: it is not cut short by the first
	// caller's cancel.
	err := fetch(context.WithoutCancel(ctx))
	if err != nil {
		err = fmt.Errorf("pull %s: %w: %w", ref, err, backends.ErrUnavailable)
	}
	cur.err = err
	p.mu.Lock()
	delete(p.inflight, ref)
	p.mu.Unlock()
	close(cur.done)
	return err
}
