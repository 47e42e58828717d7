package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sandrun/sandrun/internal/natsutil"
)

// server runs one embedded JetStream server — alone, or as a node of a
// cluster — until interrupted: a NATS node for machines without
// nats-server, and the nodes of the failure drills.
func (c cli) server(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sandrun server", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var cfg natsutil.EmbeddedConfig
	var routes, authDir string
	var noAuth bool
	fs.StringVar(&cfg.Dir, "data", "", "JetStream file store directory (required)")
	fs.StringVar(&cfg.ServerName, "name", "", "server name, unique in a cluster (default sandrun-embedded)")
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "listen host")
	fs.IntVar(&cfg.Port, "port", 4222, "client port (-1: any free port)")
	fs.IntVar(&cfg.HTTPPort, "http-port", 0, "monitoring port (0: off)")
	fs.BoolVar(&cfg.SyncAlways, "sync-always", false, "fsync every write")
	fs.StringVar(&cfg.Cluster.Name, "cluster-name", "", "cluster name: makes this server a cluster node")
	fs.IntVar(&cfg.Cluster.Port, "cluster-port", 6222, "route port of this node")
	fs.StringVar(&routes, "routes", "", "comma-separated route URLs of the other nodes (nats-route://host:port)")
	fs.BoolVar(&cfg.Cluster.NoAdvertise, "no-advertise", false, "do not tell clients the other nodes' URLs (nodes behind a proxy or load balancer)")
	fs.StringVar(&cfg.HTTPHost, "http-host", "127.0.0.1", "monitoring listen host (the endpoints need no credentials)")
	fs.StringVar(&authDir, "auth", "", "credentials directory, the same for every node of a cluster (default: DATA/auth, made on first start)")
	fs.StringVar(&cfg.TLS.Cert, "tls-cert", "", "serve clients over TLS with this certificate (PEM); a cluster node also routes over mutual TLS")
	fs.StringVar(&cfg.TLS.Key, "tls-key", "", "the certificate's key (PEM)")
	fs.StringVar(&cfg.TLS.CA, "tls-ca", "", "CA that signed every node's certificate (required for a cluster node with TLS)")
	fs.BoolVar(&noAuth, "no-auth", false, "accept connections without credentials and store data unencrypted (benchmarks and drills only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Dir == "" {
		return usageErr("server: --data is required")
	}
	var creds string
	if !noAuth {
		if authDir == "" {
			authDir = filepath.Join(cfg.Dir, "auth")
		}
		var err error
		if creds, err = secure(&cfg, cfg.Dir, authDir); err != nil {
			return err
		}
	}
	if routes != "" {
		if cfg.Cluster.Name == "" {
			return usageErr("server: --routes needs --cluster-name")
		}
		cfg.Cluster.Routes = strings.Split(routes, ",")
	}
	srv, err := natsutil.StartEmbedded(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s\n", srv.ClientURL())
	fmt.Fprintf(c.stderr, "sandrun server %s: NATS at %s (data in %s)\n", srv.Name(), srv.ClientURL(), cfg.Dir)
	if creds != "" {
		fmt.Fprintf(c.stderr, "sandrun server %s: credentials in %s\n", srv.Name(), filepath.Dir(creds))
		if err := natsutil.SaveLocalContext(srv.ClientURL(), creds); err != nil {
			fmt.Fprintf(c.stderr, "sandrun server: could not record the local context (give the CLI --creds %s): %v\n", creds, err)
		}
	}
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
