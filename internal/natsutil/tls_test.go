package natsutil_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/testenv"
)

// Cluster mode as an operator runs it: three nodes sharing one credentials
// directory, clients over TLS, routes over mutual TLS, R3 assets placed.
func TestClusterWithTLSAndCredentials(t *testing.T) {
	t.Parallel()
	p := testenv.NewPKI(t, "127.0.0.1")
	pki := natsutil.TLSFiles{CA: p.CA, Cert: p.Cert, Key: p.Key}
	m, err := auth.Ensure(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	servers, err := natsutil.StartCluster(ctx, t.TempDir(), 3, natsutil.EmbeddedConfig{Auth: m, TLS: pki})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}()
	url := natsutil.ClusterURL(servers)
	// Without the CA, the client cannot verify the server; without
	// credentials, the server refuses the client.
	if nc, err := nats.Connect(url, nats.UserCredentials(m.CredsPath("admin")), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a client that cannot verify the server's certificate connected")
	}
	if nc, err := nats.Connect(url, nats.RootCAs(pki.CA), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a TLS client without credentials was accepted")
	}
	nc, js, err := natsutil.Connect(ctx, natsutil.ConnConfig{URL: url, CredsFile: m.CredsPath("admin"), TLSCA: pki.CA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("the connection is not over TLS")
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3}); err != nil {
		t.Fatalf("R3 stream over TLS routes: %v", err)
	}
	// A node without the CA cannot verify its peers: refused at start.
	if _, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: t.TempDir(), Port: -1, Cluster: natsutil.ClusterConfig{Name: "x", Port: -1},
		TLS: natsutil.TLSFiles{Cert: pki.Cert, Key: pki.Key}}); err == nil {
		t.Fatal("a cluster node with TLS but no CA started")
	}
}
