package main

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
)

// resultKeys matches every job's record in sandrun's state bucket; a
// record that carries a result is the job's commit (batch items,
// "<batch>.<n>", are not submitted here).
const resultKeys = "run.*"

// buildSandrun builds the sandrun CLI from the module this one replaces
// (the parent directory) into dir, with that module's own go.mod and
// go.sum, which it does not change.
func buildSandrun(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/sandrun/sandrun").Output()
	if err != nil {
		return "", fmt.Errorf("find the sandrun module (run from bench/, or pass -sandrun-bin): %w", err)
	}
	src := strings.TrimSpace(string(out))
	bin := filepath.Join(dir, "sandrun")
	cmd := exec.CommandContext(ctx, "go", "build", "-C", src, "-o", bin, "./cmd/sandrun")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sandrun in %s: %w\n%s", src, err, out)
	}
	return bin, nil
}

// natsServerVersion reads the nats-server version linked into the sandrun
// binary.
func natsServerVersion(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/nats-io/nats-server/v2" {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// sandrunTarget is sandrun as deployed: `sandrun server` nodes (one, or
// three routed as a cluster), one `sandrun worker` process with the local
// backend, and the public client submitting jobs. The worker's result
// commits are followed with one watch on the state bucket.
type sandrunTarget struct {
	dir     string
	servers []*proc
	worker  *proc
	cl      *client.Client
	watch   jetstream.KeyWatcher
	secret  bool          // every job carries a secret variable
	stopped chan struct{} // the watch loop ended
	cur     atomic.Pointer[tracker]
}

// sandrunOpts configure a sandrun target.
type sandrunOpts struct {
	bin        string
	nodes      int // 1, or 3 for a cluster (with an R3 layout)
	slots      int
	syncAlways bool
	// secure runs the servers as shipped (credentials required, store
	// encrypted), the worker and the client with their roles' credentials,
	// and every job with a secret variable (sealed, opened, masked).
	secure bool
}

func startSandrun(ctx context.Context, o sandrunOpts) (_ *sandrunTarget, err error) {
	dir, err := os.MkdirTemp("", "sandrun-bench-")
	if err != nil {
		return nil, err
	}
	t := &sandrunTarget{dir: dir}
	defer func() {
		if err != nil {
			_ = t.close()
		}
	}()
	urls, err := t.startServers(o)
	if err != nil {
		return nil, err
	}
	url := strings.Join(urls, ",")
	var probeOpts []nats.Option
	if o.secure {
		probeOpts = append(probeOpts, nats.UserCredentials(filepath.Join(t.dir, "auth", "admin.creds")))
	}
	if err := waitReady(ctx, "nats", 60*time.Second, func(ctx context.Context) error {
		return probeJetStream(ctx, url, o.nodes, probeOpts...)
	}, t.servers...); err != nil {
		return nil, err
	}
	args := []string{"worker", "--nats-url", url, "--slots", strconv.Itoa(o.slots), "--name", "bench-worker", "--log-format", "text"}
	auth := filepath.Join(t.dir, "auth")
	var clientCreds string
	if o.secure {
		args = append(args, "--creds", filepath.Join(auth, "worker.creds"), "--secrets-key", filepath.Join(auth, "secrets.nk"))
		clientCreds = filepath.Join(auth, "submitter.creds")
		t.secret = true
	}
	if o.nodes > 1 {
		args = append(args, "--replicas", strconv.Itoa(o.nodes))
	}
	if t.worker, err = startProc(procSpec{name: "sandrun worker", path: o.bin, args: args}); err != nil {
		return nil, err
	}
	// The worker creates the layout; the client opens it once it exists.
	all := append([]*proc{t.worker}, t.servers...)
	if err := waitReady(ctx, "sandrun layout", 90*time.Second, func(ctx context.Context) error {
		if t.cl == nil {
			cl, err := client.Connect(ctx, client.Options{URL: url, CredsFile: clientCreds, Name: "sandrun-bench"})
			if err != nil {
				return err
			}
			t.cl = cl
		}
		if !t.secret {
			return nil
		}
		// Jobs with a secret variable are sealed to the key the worker
		// publishes at the start of its run, which may come after the
		// layout exists.
		_, err := t.cl.Seal(ctx, client.Spec{Env: map[string]string{"PROBE": "x"}, SecretEnv: []string{"PROBE"}})
		return err
	}, all...); err != nil {
		return nil, err
	}
	t.watch, err = t.cl.Store().State.Watch(ctx, resultKeys, jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("watch results: %w", err)
	}
	t.stopped = make(chan struct{})
	go t.follow()
	return t, nil
}

// startServers starts the NATS nodes and returns their client URLs.
func (t *sandrunTarget) startServers(o sandrunOpts) ([]string, error) {
	ports := make([]int, o.nodes)
	routes := make([]int, o.nodes)
	for i := range o.nodes {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
		if routes[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	var urls []string
	for i := range o.nodes {
		name := fmt.Sprintf("bench-%d", i+1)
		args := []string{"server", "--data", filepath.Join(t.dir, name), "--name", name, "--port", strconv.Itoa(ports[i])}
		if o.secure {
			args = append(args, "--auth", filepath.Join(t.dir, "auth"))
		} else {
			args = append(args, "--no-auth")
		}
		if o.syncAlways {
			args = append(args, "--sync-always")
		}
		if o.nodes > 1 {
			var peers []string
			for j, p := range routes {
				if j != i {
					peers = append(peers, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
				}
			}
			args = append(args, "--cluster-name", "bench", "--cluster-port", strconv.Itoa(routes[i]),
				"--routes", strings.Join(peers, ","), "--no-advertise")
		}
		p, err := startProc(procSpec{name: "sandrun server " + name, path: o.bin, args: args, stopSig: os.Interrupt})
		if err != nil {
			return nil, err
		}
		t.servers = append(t.servers, p)
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	return urls, nil
}

// probeJetStream succeeds once JetStream at url can place a stream of
// replicas replicas (a cluster has formed and elected its meta leader).
func probeJetStream(ctx context.Context, url string, replicas int, opts ...nats.Option) error {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Timeout(2 * time.Second)}, opts...)...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	name := "sandrun_bench_probe_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"sandrun-bench.probe." + name},
		Storage: jetstream.MemoryStorage, Replicas: replicas, MaxMsgs: 1}); err != nil {
		return err
	}
	return js.DeleteStream(ctx, name)
}

// follow reports every committed result to the current tracker. The
// result's started_at is the worker's clock just before it started the
// command (the same machine's clock as the submitter's).
func (t *sandrunTarget) follow() {
	defer close(t.stopped)
	for e := range t.watch.Updates() {
		if e == nil || e.Operation() != jetstream.KeyValuePut {
			continue
		}
		tr := t.cur.Load()
		if tr == nil {
			continue
		}
		id := strings.TrimPrefix(e.Key(), "run.")
		var rec struct {
			Result *client.Result `json:"result"`
		}
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			tr.finished(id, fmt.Errorf("decode job record: %w", err), time.Now())
			continue
		}
		if rec.Result == nil {
			continue // claimed, not ended
		}
		r := *rec.Result
		var failed error
		if r.State != client.StateSucceeded {
			failed = fmt.Errorf("%s (exit %d): %s", r.State, r.ExitCode, r.Error)
		}
		tr.started(id, time.Time{}, r.StartedAt)
		tr.finished(id, failed, time.Now())
	}
}

func (t *sandrunTarget) track(tr *tracker) { t.cur.Store(tr) }

// enqueue submits `true`, which the local backend runs as `sh -c true`.
func (t *sandrunTarget) enqueue(ctx context.Context) error {
	at := time.Now()
	s := client.Spec{Command: "true", SubmittedAt: at}
	if t.secret {
		s.Env = map[string]string{"BENCH_TOKEN": "bench-secret-value"}
		s.SecretEnv = []string{"BENCH_TOKEN"}
	}
	spec, err := t.cl.Submit(ctx, s)
	if err != nil {
		return err
	}
	t.cur.Load().enqueued(spec.ID, at)
	return nil
}

func (t *sandrunTarget) close() error {
	var errs []error
	if t.watch != nil {
		_ = t.watch.Stop()
		select {
		case <-t.stopped:
		case <-time.After(5 * time.Second):
		}
	}
	if t.cl != nil {
		t.cl.Close()
	}
	if t.worker != nil {
		errs = append(errs, t.worker.stop())
	}
	var wg sync.WaitGroup
	serverErrs := make([]error, len(t.servers))
	for i, s := range t.servers {
		wg.Go(func() { serverErrs[i] = s.stop() })
	}
	wg.Wait()
	errs = append(errs, serverErrs...)
	errs = append(errs, os.RemoveAll(t.dir))
	return errors.Join(errs...)
}

var _ target = (*sandrunTarget)(nil)
