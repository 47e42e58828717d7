package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// KeeperConfig tunes a Keeper.
type KeeperConfig struct {
	// Interval between renewals; default TTL/3.
	Interval time.Duration
	// Value is written on each renewal.
	Value []byte
	// Now is the clock; default time.Now.
	Now func() time.Time
	// OnRenew, if set, is called after each successful renewal.
	OnRenew func()
	// Margin is how long before the server may expire the lease the
	// keeper declares it lost; default max(TTL/10, 100ms). A holder that
	// must stop work on loss (kill a job, with its grace) sets at least
	// the time that takes, so it has stopped before anyone else can hold
	// the lease.
	Margin time.Duration
}

// Keeper renews a lease in the background until stopped, and declares it
// lost — closing Lost() — when a renewal is refused or when no renewal has
// succeeded for long enough that the server may already have expired it.
// The second rule is self-fencing: a holder cut off from the server (or
// frozen, or paused by GC) stops acting before anyone else can take over.
type Keeper struct {
	l    *Lease
	cfg  KeeperConfig
	lost chan struct{}
	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	err        error
	validUntil time.Time // the moment the keeper stops vouching for the lease

	stopOnce sync.Once
}

// Keep starts renewing l. The renewer runs independently of whatever the
// holder is doing, so a hung backend call never stops heartbeats. Call
// Stop when the work is done.
func Keep(l *Lease, cfg KeeperConfig) *Keeper {
	if cfg.Interval <= 0 {
		cfg.Interval = l.ttl / 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	k := &Keeper{
		l:    l,
		cfg:  cfg,
		lost: make(chan struct{}),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	k.validUntil = k.firstWindow()
	go k.loop()
	return k
}

// Valid reports whether the holder may still act on the lease now: it is
// not lost, and now is before the end of the window the last renewal
// vouches for. The keeper notices a lapsed window only when its timer
// fires, which a frozen process (SIGSTOP, a long GC pause) wakes up past;
// a holder about to start irreversible work (a job's process) asks first.
func (k *Keeper) Valid() error {
	_, err := k.Until()
	return err
}

// Until returns the end of the window the last renewal vouches for, or
// why the holder may not act now (Valid's answer). Work that starts later
// than the question, in a process that cannot be frozen along with the
// holder's, checks its own clock against it.
func (k *Keeper) Until() (time.Time, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return time.Time{}, k.err
	}
	if !k.cfg.Now().Before(k.validUntil) {
		return time.Time{}, fmt.Errorf("%s: the last renewal vouches for the lease until %s: %w", k.l.key, k.validUntil.Format(time.RFC3339Nano), ErrLost)
	}
	return k.validUntil, nil
}

// Lost is closed when the lease is lost. Err then says why.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err returns why the lease was lost, or nil.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Stop ends the renewals and waits for the renewer to exit. It is safe to
// call more than once.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}

// margin is how long before the server may expire the lease the keeper
// stops vouching for it.
func (k *Keeper) margin() time.Duration {
	if k.cfg.Margin > 0 {
		return k.cfg.Margin
	}
	return max(k.l.ttl/10, 100*time.Millisecond)
}

// firstWindow is the end of the window the lease's creation vouches for:
// TTL after its Create was sent, not after the keeper started (a claim
// may have spent seconds between), less the margin.
func (k *Keeper) firstWindow() time.Time {
	start := k.cfg.Now()
	if !k.l.acquired.IsZero() && k.l.acquired.Before(start) {
		start = k.l.acquired
	}
	return start.Add(k.l.ttl - k.margin())
}

func (k *Keeper) loop() {
	defer close(k.done)
	// A renewal that succeeds moves the server-side expiry to at least
	// send time + TTL, so the lease is surely ours until then. Stop acting
	// a margin before that.
	margin := k.margin()
	k.mu.Lock()
	validUntil := k.validUntil
	k.mu.Unlock()
	wait := k.cfg.Interval
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		sent := k.cfg.Now()
		if !sent.Before(validUntil) {
			k.fail(fmt.Errorf("%s: no renewal succeeded within the ttl (%s): %w", k.l.key, k.l.ttl, ErrLost))
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), validUntil)
		err := k.l.Renew(ctx, k.cfg.Value)
		cancel()
		switch {
		case err == nil:
			validUntil = sent.Add(k.l.ttl - margin)
			k.mu.Lock()
			k.validUntil = validUntil
			k.mu.Unlock()
			wait = k.cfg.Interval
			if k.cfg.OnRenew != nil {
				k.cfg.OnRenew()
			}
		case errors.Is(err, ErrLost):
			k.fail(err)
			return
		default:
			// Transient: try again soon, but never past validUntil.
			wait = min(k.cfg.Interval/4+time.Millisecond, max(validUntil.Sub(k.cfg.Now()), time.Millisecond))
		}
		t.Reset(wait)
	}
}

func (k *Keeper) fail(err error) {
	k.mu.Lock()
	k.err = err
	k.mu.Unlock()
	close(k.lost)
}
