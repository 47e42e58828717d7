package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/metrics"
)

// A warm pool keeps Config.WarmPool containers of the profile created and
// started — with the configuration a fresh container of a plain job gets,
// hardening and labels included — so that a job claims one and only
// hands it its command. A container's command and environment are fixed
// at create, so a pooled container runs a wrapper (poolrun.go), a shell
// blocked reading its stdin, that reads the job's directory, environment
// and command and execs the command as a fresh container would run it.
// The engine's start is most of a one-shot job's cost (about three
// quarters on the machine measured in docs/BENCHMARKS.md): created but not
// started, a pooled container saved a tenth. An idle one costs its
// blocked shell (no CPU; its memory counts against the container's own
// limit). Each pooled container serves one job and is removed after it;
// the pool refills in the background.
//
// Lifecycle of a pool (one per deployment and worker, the labels a
// container needs at create):
//
//  1. The first eligible job of a deployment and worker (or WarmPool)
//     starts a fill; the job itself runs in a fresh container.
//  2. A fill creates and starts containers until the pool holds WarmPool
//     idle ones, one at a time, and ends. A claim that leaves the pool short starts
//     another once its job's container has exited or run for
//     refillDelay (a create competes with a start and an exit for the
//     engine). A failed create ends the fill; the next claim after
//     poolRetry tries again.
//  3. Close waits for the fills (the create in flight of each) and
//     removes the idle containers. ReapOrphans
//     removes the idle containers of pools unused for SessionIdle, and
//     those of dead workers.

// LabelPool marks a pooled container. Its job and attempt are not
// labels (labels are fixed at create) but its name, given when a job
// claims it (see claimName).
const LabelPool = "io.sandrun.pool"

// LabelProfile names the profile of a pooled container: only that
// profile's backend removes it while idle.
const LabelProfile = "io.sandrun.profile"

// MaxWarmPool bounds Config.WarmPool.
const MaxWarmPool = 32

// poolRetry is how long a pool whose fill failed waits before the next
// fill.
const poolRetry = 30 * time.Second

// poolKey names a pool: the labels its containers were created with.
type poolKey struct{ deployment, worker string }

// pooledContainer is an idle container of a pool.
type pooledContainer struct {
	id string
	// level is SHLVL in the image's environment, which the wrapper
	// restores for the job (see payload).
	level shellLevel
	// fill, when set on a claimed container, starts the fill its claim
	// made due (once: see startFill).
	fill func()
}

// startFill starts the fill c's claim made due, if any, once: runPooled
// does when c's job has started, discard at the latest.
func (c pooledContainer) startFill() {
	if c.fill != nil {
		c.fill()
	}
}

// pool is the state of one pool.
type pool struct {
	idle     []pooledContainer // oldest first
	filling  bool
	failed   error
	failedAt time.Time
	lastUsed time.Time
}

// pools are a backend's warm pools. Its methods are safe for concurrent
// use.
type pools struct {
	size int

	mu       sync.Mutex
	m        map[poolKey]*pool
	owned    map[string]bool // pooled containers this backend made and has not removed
	removing int             // claimed containers being removed after their job
	closed   bool
	changed  chan struct{}  // closed and replaced at every change
	fills    sync.WaitGroup // running fills
}

func newPools(size int) *pools {
	return &pools{size: size, m: map[poolKey]*pool{}, owned: map[string]bool{}, changed: make(chan struct{})}
}

// notify wakes the waiters of WarmPool; mu is held.
func (ps *pools) notify() {
	close(ps.changed)
	ps.changed = make(chan struct{})
}

// get returns key's pool, made on first use; mu is held.
func (ps *pools) get(key poolKey) *pool {
	p := ps.m[key]
	if p == nil {
		p = &pool{lastUsed: time.Now()}
		ps.m[key] = p
	}
	return p
}

// startFill reports whether the caller must run a fill of p now, and
// counts it; mu is held.
func (ps *pools) startFill(p *pool) bool {
	if ps.closed || p.filling || len(p.idle) >= ps.size || (p.failed != nil && time.Since(p.failedAt) < poolRetry) {
		return false
	}
	p.filling = true
	ps.fills.Add(1)
	return true
}

// take hands out the oldest idle container of key's pool, if any, and
// reports whether a fill must start.
func (ps *pools) take(key poolKey) (c pooledContainer, ok, fill bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return c, false, false
	}
	p := ps.get(key)
	p.lastUsed = time.Now()
	if len(p.idle) > 0 {
		c, ok = p.idle[0], true
		p.idle = p.idle[1:]
		ps.notify()
	}
	return c, ok, ps.startFill(p)
}

// more reports whether key's fill should create another container; when
// not, the fill ends.
func (ps *pools) more(key poolKey) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.get(key)
	if ps.closed || len(p.idle) >= ps.size {
		p.filling = false
		ps.notify()
		return false
	}
	return true
}

// add records the outcome of one create of key's fill: false ends the
// fill (and the caller removes c, if it was made, when the pools closed).
func (ps *pools) add(key poolKey, c pooledContainer, err error) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.get(key)
	defer ps.notify()
	if err != nil || ps.closed {
		p.filling = false
		if err != nil {
			p.failed, p.failedAt = err, time.Now()
		}
		return false
	}
	p.failed = nil
	p.idle = append(p.idle, c)
	ps.owned[c.id] = true
	return true
}

// owns reports whether id is a pooled container of this backend.
func (ps *pools) owns(id string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.owned[id]
}

// removingStarts and removed bracket the removal of a claimed container.
func (ps *pools) removingStarts() {
	ps.mu.Lock()
	ps.removing++
	ps.mu.Unlock()
}

func (ps *pools) removed(id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.owned, id)
	ps.removing--
	ps.notify()
}

// expire takes the idle containers of pools unused for idle.
func (ps *pools) expire(idle time.Duration) []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var ids []string
	for k, p := range ps.m {
		if !p.filling && time.Since(p.lastUsed) > idle {
			for _, c := range p.idle {
				ids = append(ids, c.id)
				delete(ps.owned, c.id)
			}
			delete(ps.m, k)
		}
	}
	return ids
}

// close ends the fills — waiting for their creates in flight, whose
// containers they remove — and returns every idle container.
func (ps *pools) close() []string {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil
	}
	ps.closed = true
	ps.notify()
	ps.mu.Unlock()
	ps.fills.Wait()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var ids []string
	for _, p := range ps.m {
		for _, c := range p.idle {
			ids = append(ids, c.id)
			delete(ps.owned, c.id)
		}
	}
	ps.m = map[poolKey]*pool{}
	return ids
}

// fill creates containers for key's pool until it is full or the pools
// close; ctx carries the values of the job that started it, and no
// cancel: the engine finishes a create whose client went away, and the
// container would be left behind. Close waits for the create in flight.
func (d *Docker) fill(ctx context.Context, key poolKey) {
	defer d.pools.fills.Done()
	for d.pools.more(key) {
		c, err := d.createPooled(ctx, key)
		if !d.pools.add(key, c, err) {
			if err == nil {
				d.remove(ctx, c.id)
			}
			return
		}
	}
}

// errPoolEntrypoint is a fill's error for an image with an entrypoint:
// the entrypoint would run the wrapper, so jobs run in fresh containers.
var errPoolEntrypoint = errors.New("the image has an entrypoint, which would run the pool's wrapper: jobs run in fresh containers")

// createPooled creates and starts one container for key's pool: the
// configuration a plain job's fresh container gets, with the wrapper as
// its command, its stdin open for the job's payload, and no job or
// attempt label.
func (d *Docker) createPooled(ctx context.Context, key poolKey) (pooledContainer, error) {
	cfg, host, err := d.containerConfig(backends.Spec{Deployment: key.deployment, Worker: key.worker})
	if err != nil {
		return pooledContainer{}, err
	}
	if err := d.ensureImage(ctx, cfg.Image); err != nil {
		return pooledContainer{}, err
	}
	img, err := d.api.ImageInspect(ctx, cfg.Image)
	if err != nil {
		return pooledContainer{}, fmt.Errorf("warm pool: image %s: %w", cfg.Image, err)
	}
	var level shellLevel
	if ic := img.Config; ic != nil {
		if len(ic.Entrypoint) > 0 {
			return pooledContainer{}, fmt.Errorf("warm pool: image %s: %w", cfg.Image, errPoolEntrypoint)
		}
		level = imageShellLevel(ic.Env)
	}
	cfg.Cmd = []string{"/bin/sh", "-c", wrapperScript}
	cfg.OpenStdin, cfg.StdinOnce, cfg.AttachStdin = true, true, true
	delete(cfg.Labels, LabelJob)
	delete(cfg.Labels, LabelAttempt)
	cfg.Labels[LabelPool] = "true"
	cfg.Labels[LabelProfile] = d.cfg.Profile
	start := time.Now()
	created, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	d.observe(func(m *metrics.Metrics) prometheus.Observer { return m.ContainerCreate.WithLabelValues(d.cfg.Profile) }, start)
	if err != nil {
		return pooledContainer{}, fmt.Errorf("warm pool: create: %w", err)
	}
	start = time.Now()
	if _, err := d.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		d.remove(ctx, created.ID)
		return pooledContainer{}, fmt.Errorf("warm pool: start: %w", err)
	}
	d.observe(func(m *metrics.Metrics) prometheus.Observer { return m.ContainerStart.WithLabelValues(d.cfg.Profile) }, start)
	return pooledContainer{id: created.ID, level: level}, nil
}

// shellLevel is SHLVL as the image's environment sets it.
type shellLevel struct {
	set   bool
	value string
}

func imageShellLevel(env []string) shellLevel {
	var l shellLevel
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "SHLVL="); ok {
			l = shellLevel{set: true, value: v}
		}
	}
	return l
}

// bash is the SHLVL bash, whose exec builtin lowers SHLVL by one, must
// hold so that the job's shell sees what a fresh one would.
func (l shellLevel) bash() int {
	n, _ := strconv.Atoi(strings.TrimSpace(l.value))
	return n + 1
}

// WarmPool starts filling the warm pool of deployment and worker (the
// Spec fields of the jobs it serves) and waits until it holds
// Config.WarmPool idle containers and no claimed one awaits removal —
// the steady state between jobs. A worker may call it at start so that
// its first jobs find the pool full; benchmarks and tests call it between
// jobs. It returns at once when the profile has no pool, and the fill's
// error when a fill fails.
func (d *Docker) WarmPool(ctx context.Context, deployment, worker string) error {
	ps := d.pools
	if ps.size == 0 {
		return nil
	}
	key := poolKey{deployment, worker}
	for {
		ps.mu.Lock()
		if ps.closed {
			ps.mu.Unlock()
			return errors.New("docker: warm pool: backend closed")
		}
		p := ps.get(key)
		fill := ps.startFill(p)
		full := len(p.idle) >= ps.size && ps.removing == 0
		failed := p.failed
		if p.filling {
			failed = nil // a fill runs: wait for its outcome
		}
		changed := ps.changed
		ps.mu.Unlock()
		if fill {
			go d.fill(context.WithoutCancel(ctx), key)
		}
		switch {
		case full:
			return nil
		case failed != nil:
			return fmt.Errorf("docker: %w", failed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
