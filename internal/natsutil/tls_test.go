package natsutil_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// testPKI writes a CA and a certificate for 127.0.0.1 signed by it.
func testPKI(t *testing.T) natsutil.TLSFiles {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandrun test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sandrun node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return natsutil.TLSFiles{CA: write("ca.pem", "CERTIFICATE", caDER), Cert: write("node.pem", "CERTIFICATE", leafDER),
		Key: write("node-key.pem", "EC PRIVATE KEY", keyDER)}
}

// Cluster mode as an operator runs it: three nodes sharing one credentials
// directory, clients over TLS, routes over mutual TLS, R3 assets placed.
func TestClusterWithTLSAndCredentials(t *testing.T) {
	t.Parallel()
	pki := testPKI(t)
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
