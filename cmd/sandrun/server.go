package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/natsutil"
)

// serverCmd runs one embedded JetStream server — alone, or as a node of
// a cluster — until interrupted: a NATS node for machines without
// nats-server, and the nodes of the failure drills.
func (c cli) serverCmd() *cobra.Command {
	var o serverOptions
	cmd := &cobra.Command{
		Use:   "server --data DIR",
		Short: "one embedded NATS node (--cluster-name, --routes: a cluster node)",
		Long: `Run one embedded JetStream server until interrupted. It prints its client URL
on standard output, and saves a context (--save-context, default "server") for
the CLI on this machine.`,
		Example: `  sandrun server --data ./nats-data
  sandrun server --data ./n1 --name n1 --cluster-name c --cluster-port 6222 --routes nats-route://127.0.0.1:6223,nats-route://127.0.0.1:6224`,
		Args: argsUsage(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.server(cmd.Context(), o) },
	}
	fs := cmd.Flags()
	cfg := &o.cfg
	fs.StringVar(&cfg.Dir, "data", "", "JetStream file store directory (required)")
	fs.StringVar(&cfg.ServerName, "name", "", "server name, unique in a cluster (default sandrun-embedded)")
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "listen host")
	fs.IntVar(&cfg.Port, "port", 4222, "client port (-1: any free port)")
	fs.IntVar(&cfg.HTTPPort, "http-port", 0, "monitoring port (0: off)")
	fs.BoolVar(&cfg.SyncAlways, "sync-always", false, "fsync every write")
	fs.StringVar(&cfg.Cluster.Name, "cluster-name", "", "cluster name: makes this server a cluster node")
	fs.IntVar(&cfg.Cluster.Port, "cluster-port", 6222, "route port of this node")
	fs.StringVar(&o.routes, "routes", "", "comma-separated route URLs of the other nodes (nats-route://host:port)")
	fs.BoolVar(&cfg.Cluster.NoAdvertise, "no-advertise", false, "do not tell clients the other nodes' URLs (nodes behind a proxy or load balancer)")
	fs.StringVar(&cfg.HTTPHost, "http-host", "127.0.0.1", "monitoring listen host (the endpoints need no credentials)")
	fs.StringVar(&o.authDir, "auth", "", "credentials directory, the same for every node of a cluster (default: DATA/auth, made on first start)")
	fs.StringVar(&cfg.TLS.Cert, "tls-cert", "", "serve clients over TLS with this certificate (PEM); a cluster node also routes over mutual TLS")
	fs.StringVar(&cfg.TLS.Key, "tls-key", "", "the certificate's key (PEM)")
	fs.StringVar(&cfg.TLS.CA, "tls-ca", "", "CA that signed every node's certificate (required for a cluster node with TLS)")
	fs.BoolVar(&o.noAuth, "no-auth", false, "accept connections without credentials and store data unencrypted (benchmarks and drills only)")
	fs.StringVar(&o.saveContext, "save-context", "server", "save a context of this name for the CLI here (made current when none is; \"\": none)")
	return cmd
}

type serverOptions struct {
	cfg                          natsutil.EmbeddedConfig
	routes, authDir, saveContext string
	noAuth                       bool
}

func (c cli) server(ctx context.Context, o serverOptions) error {
	cfg, authDir := o.cfg, o.authDir
	if o.saveContext != "" {
		if err := validContextName(o.saveContext); err != nil {
			return fmt.Errorf("--save-context: %w", err)
		}
	}
	if cfg.Dir == "" {
		return usageErr("server: --data is required")
	}
	var creds string
	if !o.noAuth {
		if authDir == "" {
			authDir = filepath.Join(cfg.Dir, "auth")
		}
		var err error
		if creds, err = secure(&cfg, cfg.Dir, authDir); err != nil {
			return err
		}
	}
	if o.routes != "" {
		if cfg.Cluster.Name == "" {
			return usageErr("server: --o.routes needs --cluster-name")
		}
		cfg.Cluster.Routes = strings.Split(o.routes, ",")
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
			fmt.Fprintf(c.stderr, "sandrun server: could not record the local credentials (give the CLI --creds %s): %v\n", creds, err)
		}
	}
	if o.saveContext != "" {
		saveServerContext(c.stderr, o.saveContext, srv.ClientURL(), creds)
	}
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
