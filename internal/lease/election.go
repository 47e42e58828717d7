package lease

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Elector campaigns for leadership of one role (a key in the elections
// bucket) and runs a function while it leads. Leadership is a lease: the
// leader renews it every TTL/3 and steps down — cancelling the function's
// context — as soon as a renewal is refused or overdue, before anyone else
// can win. A candidate retries every TTL/4 (with jitter).
type Elector struct {
	JS     jetstream.JetStream
	KV     jetstream.KeyValue
	Role   string        // key, e.g. "reaper"
	ID     string        // this candidate, stored as the key's value
	TTL    time.Duration // leadership lease TTL
	Logger *slog.Logger
	// OnChange, if set, is called with true on winning and false on
	// stepping down.
	OnChange func(leader bool)
}

// Run campaigns until ctx is done, calling lead(leaderCtx) each time this
// candidate wins. lead must return promptly once leaderCtx is done. On
// return, a held leadership is released so another candidate can take
// over without waiting for the TTL.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) {
	for {
		l, err := Acquire(ctx, e.JS, e.KV, e.Role, e.TTL, []byte(e.ID))
		switch {
		case err == nil:
			e.leadWhileHeld(ctx, l, lead)
		case !errors.Is(err, ErrHeld) && ctx.Err() == nil:
			e.Logger.Warn("election: campaign failed", "role", e.Role, "err", err)
		}
		wait := e.TTL/4 + rand.N(e.TTL/4+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (e *Elector) leadWhileHeld(ctx context.Context, l *Lease, lead func(ctx context.Context)) {
	k := Keep(l, KeeperConfig{Value: []byte(e.ID)})
	leaderCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	e.Logger.Info("election: leading", "role", e.Role, "id", e.ID)
	if e.OnChange != nil {
		e.OnChange(true)
	}
	go func() {
		defer close(done)
		lead(leaderCtx)
	}()
	select {
	case <-k.Lost():
		e.Logger.Warn("election: leadership lost", "role", e.Role, "err", k.Err())
	case <-ctx.Done():
	case <-done:
	}
	cancel()
	<-done
	k.Stop()
	if e.OnChange != nil {
		e.OnChange(false)
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer rcancel()
	if err := l.Release(rctx); err != nil {
		e.Logger.Warn("election: release failed", "role", e.Role, "err", err)
	}
}
