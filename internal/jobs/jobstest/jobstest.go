// Package jobstest starts an embedded JetStream server with sandrun's
// layout for tests of packages that sandruntest cannot serve (it imports
// them: client, worker).
package jobstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// Store starts a server in a temporary directory, ensures the layout and
// returns a store on it; everything is closed at the test's cleanup.
func Store(t testing.TB) *jobs.Store {
	t.Helper()
	s, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	return Layout(t, nc)
}

// Layout ensures the layout through nc (closed at cleanup) and returns a
// store on it.
func Layout(t testing.TB, nc *nats.Conn) *jobs.Store {
	t.Helper()
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), jobs.LayoutConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
