package main

import (
	"context"
	"flag"
	"fmt"
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
	var routes string
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Dir == "" {
		return usageErr("server: --data is required")
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
	<-ctx.Done()
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
