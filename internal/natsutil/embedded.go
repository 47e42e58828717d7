// Package natsutil connects to NATS with the settings sandrun's daemons
// need, and runs an embedded JetStream server for the single-machine
// default and for tests.
package natsutil

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/metrics"
)

// EmbeddedConfig configures an in-process JetStream server.
type EmbeddedConfig struct {
	// Dir holds the JetStream file store. Required.
	Dir string
	// Host and Port of the client listener. Port 0 means 4222; -1 picks a
	// free port. The default host is 127.0.0.1: the embedded server is
	// for one machine and never listens on other interfaces by default.
	Host string
	Port int
	// HTTPPort serves the monitoring endpoints (/varz, /jsz, /healthz)
	// when non-zero; -1 picks a free port. They need no credentials, so
	// they listen on HTTPHost, 127.0.0.1 unless set.
	HTTPPort int
	HTTPHost string
	// SyncAlways fsyncs every write (durable against power loss, about 5x
	// slower). The default fsyncs every two minutes, like nats-server.
	SyncAlways bool
	// MaxStore and MaxMemory bound JetStream storage (defaults 10 GiB and
	// 256 MiB, instead of the server's 75% of the machine).
	MaxStore  int64
	MaxMemory int64
	// MaxPayload is the largest message (default 8 MiB).
	MaxPayload int32
	// ServerName defaults to "sandrun-embedded". Every node of a
	// cluster needs its own.
	ServerName string
	// Cluster, when its Name is set, makes the server a node of a
	// JetStream cluster.
	Cluster ClusterConfig
	// Logs routes the server's own logs to stderr when true.
	Logs bool
	// Auth, when set, makes the server refuse every connection without a
	// user of this material, and enforce each user's permissions.
	Auth *auth.Material
	// EncryptionKey, when set, encrypts the JetStream store at rest
	// (ChaCha20-Poly1305).
	EncryptionKey string
	// TLS, when its Cert is set, serves clients over TLS and, on a
	// cluster node, routes over mutual TLS (every node's certificate
	// signed by CA).
	TLS TLSFiles
}

// TLSFiles are PEM files: a server's certificate and key, and the CA that
// signed the cluster's certificates.
type TLSFiles struct {
	Cert, Key, CA string
}

func (t TLSFiles) configure(opts *server.Options) error {
	if t.Cert == "" && t.Key == "" {
		if t.CA != "" {
			return errors.New("embedded nats: tls: a CA without a certificate and key")
		}
		return nil
	}
	if t.Cert == "" || t.Key == "" {
		return errors.New("embedded nats: tls: the certificate and the key go together")
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA})
	if err != nil {
		return fmt.Errorf("embedded nats: tls: %w", err)
	}
	opts.TLSConfig, opts.TLS, opts.TLSTimeout = tc, true, 2
	opts.TLSCert, opts.TLSKey, opts.TLSCaCert = t.Cert, t.Key, t.CA
	if opts.Cluster.Name != "" {
		if t.CA == "" {
			return errors.New("embedded nats: tls: a cluster node needs the CA (--tls-ca) to verify the other nodes")
		}
		rc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: t.Cert, KeyFile: t.Key, CaFile: t.CA, Verify: true})
		if err != nil {
			return fmt.Errorf("embedded nats: route tls: %w", err)
		}
		// A node is both client and server of its routes: the CA verifies
		// the peers it dials too (as nats-server's config parser does).
		rc.RootCAs = rc.ClientCAs
		opts.Cluster.TLSConfig, opts.Cluster.TLSTimeout = rc, 2
	}
	return nil
}

// ClusterConfig makes an embedded server one node of a cluster.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Port is this node's route port (on the server's host); -1 picks a
	// free one.
	Port int
	// Routes are the other nodes' route URLs (nats-route://host:port).
	Routes []string
	// NoAdvertise keeps the other nodes' client URLs from clients, which
	// then reconnect only to the URLs they were given (nodes behind a
	// proxy or a load balancer).
	NoAdvertise bool
}

// StartEmbedded starts a JetStream server and waits until it accepts
// connections. Stop it with Shutdown + WaitForShutdown.
func StartEmbedded(cfg EmbeddedConfig) (*server.Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded nats: dir is required")
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		HTTPHost:           cfg.HTTPHost,
		HTTPPort:           cfg.HTTPPort,
		JetStream:          true,
		StoreDir:           cfg.Dir,
		JetStreamMaxStore:  cfg.MaxStore,
		JetStreamMaxMemory: cfg.MaxMemory,
		MaxPayload:         cfg.MaxPayload,
		SyncAlways:         cfg.SyncAlways,
		NoSigs:             true,
		NoLog:              !cfg.Logs,
	}
	if cfg.Auth != nil {
		if err := cfg.Auth.ServerOptions(opts); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
	}
	if cfg.EncryptionKey != "" {
		opts.JetStreamKey, opts.JetStreamCipher = cfg.EncryptionKey, server.ChaCha
	}
	if c := cfg.Cluster; c.Name != "" {
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: opts.Host, Port: c.Port, NoAdvertise: c.NoAdvertise}
		if opts.Cluster.Host == "" {
			opts.Cluster.Host = "127.0.0.1"
		}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("embedded nats: cluster route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	if err := cfg.TLS.configure(opts); err != nil {
		return nil, err
	}
	if opts.ServerName == "" {
		opts.ServerName = "sandrun-embedded"
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.HTTPHost == "" {
		opts.HTTPHost = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = 4222
	}
	if opts.JetStreamMaxStore == 0 {
		opts.JetStreamMaxStore = 10 << 30
	}
	if opts.JetStreamMaxMemory == 0 {
		opts.JetStreamMaxMemory = 256 << 20
	}
	if opts.MaxPayload == 0 {
		opts.MaxPayload = 8 << 20
	}
	// Two servers on one store corrupt it: the second is refused.
	lock, err := lockDataDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if cfg.Logs {
		s.ConfigureLogger()
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		_ = lock.Close()
		return nil, errors.New("embedded nats: not ready after 30s")
	}
	go func() {
		s.WaitForShutdown()
		_ = lock.Close()
	}()
	return s, nil
}

// ErrDataDirInUse is StartEmbedded's error for a data directory another
// running server holds.
var ErrDataDirInUse = errors.New("data directory in use")

// lockDataDir takes an exclusive lock on dir (made if need be), held
// until the returned file is closed: by a server of this process or of
// another, the lock says the store is taken.
func lockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".sandrun.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	// A server of this process that was just shut down releases the
	// lock a moment after WaitForShutdown returns: wait for it then.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		pid, _ := os.ReadFile(f.Name())
		holder := strings.TrimSpace(string(pid))
		if errors.Is(err, syscall.EWOULDBLOCK) && holder == strconv.Itoa(os.Getpid()) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedded nats: %s: %w by another server (pid %s): stop it, or give this one its own --data", dir, ErrDataDirInUse, holder)
		}
		return nil, fmt.Errorf("embedded nats: lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// Stats returns a reader of srv's own figures for the metrics.
func Stats(srv *server.Server) func() (metrics.ServerStats, error) {
	return func() (metrics.ServerStats, error) {
		v, err := srv.Varz(nil)
		if err != nil {
			return metrics.ServerStats{}, err
		}
		st := metrics.ServerStats{Connections: v.Connections, InMsgs: v.InMsgs, OutMsgs: v.OutMsgs,
			InBytes: v.InBytes, OutBytes: v.OutBytes, SlowConsumers: v.SlowConsumers}
		if js := v.JetStream.Stats; js != nil {
			st.JetStreamMemory, st.JetStreamStore, st.JetStreamReservedStorage = js.Memory, js.Store, js.ReservedStore
			st.JetStreamAPIRequests, st.JetStreamAPIErrors = js.API.Total, js.API.Errors
		}
		if jsz, err := srv.Jsz(nil); err == nil {
			st.JetStreamStreams, st.JetStreamConsumers = jsz.Streams, jsz.Consumers
		}
		return st, nil
	}
}
