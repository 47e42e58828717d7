package natsutil

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// StartCluster starts n embedded servers on loopback as one JetStream
// cluster (names sandrun-1..n, data in dir/node-i), and waits until the
// cluster has elected its meta leader, so that R3 assets can be placed.
// base configures every node (Dir, ServerName and Cluster are set here);
// with base.Port > 0, node i listens on base.Port+i. Stop every server
// with Shutdown + WaitForShutdown.
func StartCluster(ctx context.Context, dir string, n int, base EmbeddedConfig) ([]*server.Server, error) {
	if n < 1 {
		return nil, errors.New("embedded cluster: want at least one node")
	}
	routePorts := make([]int, n)
	for i := range routePorts {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		routePorts[i] = p
	}
	var servers []*server.Server
	stop := func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	for i := range n {
		cfg := base
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		cfg.ServerName = fmt.Sprintf("sandrun-%d", i+1)
		if base.Port > 0 {
			cfg.Port = base.Port + i
		} else {
			cfg.Port = -1
		}
		cfg.Cluster = ClusterConfig{Name: "sandrun", Port: routePorts[i]}
		for j, p := range routePorts {
			if j != i {
				cfg.Cluster.Routes = append(cfg.Cluster.Routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		s, err := StartEmbedded(cfg)
		if err != nil {
			stop()
			return nil, fmt.Errorf("node %d: %w", i+1, err)
		}
		servers = append(servers, s)
	}
	var opts []nats.Option
	if base.Auth != nil {
		opts = append(opts, nats.UserCredentials(base.Auth.CredsPath("admin")))
	}
	if base.TLS.CA != "" {
		opts = append(opts, nats.RootCAs(base.TLS.CA))
	}
	if err := WaitJetStream(ctx, ClusterURL(servers), min(n, 3), opts...); err != nil {
		stop()
		return nil, err
	}
	return servers, nil
}

// ClusterURL is the comma-separated client URLs of servers.
func ClusterURL(servers []*server.Server) string {
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// WaitJetStream waits until JetStream at url can place a stream of
// replicas copies: the meta leader is elected and enough servers have
// joined. It probes with a small in-memory stream it removes again; opts
// add to the connection's (credentials).
func WaitJetStream(ctx context.Context, url string, replicas int, opts ...nats.Option) error {
	deadline := time.Now().Add(30 * time.Second)
	opts = append([]nats.Option{nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	probe := &nats.StreamConfig{Name: "sandrun_probe_" + nats.NewInbox()[7:], Subjects: []string{"sandrun.probe." + nats.NewInbox()[7:]},
		Storage: nats.MemoryStorage, Replicas: replicas, MaxMsgs: 1}
	for {
		// Short attempts: a request sent before the meta leader is
		// elected gets no answer, and must not wait out ctx.
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := js.AddStream(probe, nats.Context(actx))
		cancel()
		if err == nil {
			_ = js.DeleteStream(probe.Name)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("jetstream at %s cannot place %d replicas after 30s (every node up, routed and running JetStream?): %w", url, replicas, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// FreePort returns a TCP port free on loopback now (for nodes and tests
// that must know their ports before they listen). It picks below the
// kernel's ephemeral range, where no outgoing connection takes a local
// port between this check and the caller's listen (with many processes
// connecting at once, a port from the ephemeral range often is), and
// never hands the same port out twice in one process.
func FreePort() (int, error) {
	lo, hi := 10000, ephemeralLow()-1
	for range 200 {
		p := lo + rand.IntN(hi-lo+1)
		if _, taken := handedOut.LoadOrStore(p, true); taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p, nil
	}
	return 0, errors.New("no free loopback port below the ephemeral range after 200 tries")
}

var handedOut sync.Map

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	low := 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low
	}
	if f := strings.Fields(string(data)); len(f) == 2 {
		if v, err := strconv.Atoi(f[0]); err == nil && v > 11000 {
			low = v
		}
	}
	return low
}
