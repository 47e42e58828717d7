// Package nomad_test checks the Nomad job files in this directory: they
// parse as HCL, and what they say agrees with sandrun and nats-server —
// the rendered daemon configurations load with sandrun's strict decoder,
// the rendered nats.conf loads with nats-server's, ports match sandrun's
// defaults, kill timeouts cover the drain and lame-duck times, and no
// credential is written in a file.
package nomad_test

import (
	"crypto/tls"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// metricsPort is the convention: every sandrun daemon serves /metrics on
// 9464 (examples/worker.yaml's metrics_addr), in its container or on its
// host, and its Nomad service names that port "metrics".
const metricsPort = 9464

// The job files this directory must hold.
const (
	natsFile       = "nats.nomad.hcl"
	schedulerFile  = "sandrun-scheduler.nomad.hcl"
	workerFile     = "sandrun-worker.nomad.hcl"
	prometheusFile = "prometheus.nomad.hcl"
)

func TestJobFilesParse(t *testing.T) {
	t.Parallel()
	files := loadJobFiles(t)
	for _, want := range []string{natsFile, schedulerFile, workerFile, prometheusFile} {
		if files[want] == nil {
			t.Errorf("%s is missing", want)
		}
	}
	for _, f := range files {
		if dcs := f.strings(t, f.job.Body, "datacenters"); len(dcs) == 0 {
			t.Errorf("%s: job %q has no datacenters", f.name, f.job.Labels[0])
		}
		groups := blocks(f.job.Body, "group")
		if len(groups) == 0 {
			t.Errorf("%s: no groups", f.name)
		}
		for _, g := range groups {
			if len(blocks(g.Body, "task")) == 0 {
				t.Errorf("%s: group %q has no task", f.name, g.Labels[0])
			}
			for _, s := range f.services(t, g) {
				if s.provider != "nomad" {
					t.Errorf("%s: service %q: provider %q, want nomad (no Consul needed)", f.name, s.name, s.provider)
				}
			}
			checkDockerPorts(t, f, g)
		}
	}
}

// checkDockerPorts: a docker task publishes every port a service of its
// group names.
func checkDockerPorts(t *testing.T, f *jobFile, g *hclsyntax.Block) {
	t.Helper()
	var published []string
	docker := false
	for _, task := range blocks(g.Body, "task") {
		if f.str(t, task.Body, "driver") == "docker" {
			docker = true
			published = append(published, f.strings(t, config(t, f, task), "ports")...)
		}
	}
	if !docker {
		return
	}
	for _, s := range f.services(t, g) {
		if !slices.Contains(published, s.port) {
			t.Errorf("%s: service %q uses port %q that no docker task of group %q publishes", f.name, s.name, s.port, g.Labels[0])
		}
	}
}

// firstArg is the first of a task's args: sandrun's subcommand. (The
// others may hold Nomad runtime references such as ${NOMAD_TASK_DIR}.)
func firstArg(t *testing.T, f *jobFile, task *hclsyntax.Block) string {
	t.Helper()
	a := attr(config(t, f, task), "args")
	if a == nil {
		return ""
	}
	tuple, ok := a.Expr.(*hclsyntax.TupleConsExpr)
	if !ok || len(tuple.Exprs) == 0 {
		t.Fatalf("%s: task %q: args is not a list", f.name, task.Labels[0])
	}
	return f.eval(t, tuple.Exprs[0]).AsString()
}

func config(t *testing.T, f *jobFile, task *hclsyntax.Block) *hclsyntax.Body {
	t.Helper()
	cs := blocks(task.Body, "config")
	if len(cs) != 1 {
		t.Fatalf("%s: task %q: %d config blocks", f.name, task.Labels[0], len(cs))
	}
	return cs[0].Body
}

func TestNATSCluster(t *testing.T) {
	t.Parallel()
	f := parseJobFile(t, natsFile)
	groups := blocks(f.job.Body, "group")
	servers := 0
	for _, g := range groups {
		servers += f.num(t, g.Body, "count", 1)
	}
	if servers != 3 {
		t.Fatalf("%d NATS servers, want 3 (an R3 JetStream cluster)", servers)
	}
	fx := clusterFixture(t, f)
	for _, g := range groups {
		if !f.distinctHosts(t, g) {
			t.Errorf("group %q: no distinct_hosts constraint", g.Labels[0])
		}
		ports := f.ports(t, g)
		wantPorts := map[string]int{"client": defaultNATSPort(t), "cluster": 6222, "monitor": 8222}
		for label, want := range wantPorts {
			if p := ports[label]; p.static != want || p.inner() != want {
				t.Errorf("port %q: static %d to %d, want static %d", label, p.static, p.to, want)
			}
		}

		svcs := f.services(t, g)
		for name, label := range map[string]string{"nats": "client", "nats-cluster": "cluster", "nats-monitor": "monitor"} {
			s, ok := findService(svcs, name)
			if !ok {
				t.Errorf("no service %q", name)
				continue
			}
			if s.port != label {
				t.Errorf("service %q on port %q, want %q", name, s.port, label)
			}
		}
		if s, _ := findService(svcs, "nats"); len(s.checks) == 0 {
			t.Error(`service "nats" has no check`)
		}

		var volume string
		for _, v := range blocks(g.Body, "volume") {
			if f.str(t, v.Body, "type") == "host" && f.str(t, v.Body, "source") != "" {
				volume = v.Labels[0]
			}
		}
		if volume == "" {
			t.Fatal("no host volume for the JetStream store")
		}

		task := labelled(g.Body, "task", "nats")
		if task == nil {
			t.Fatal(`no task "nats"`)
		}
		conf, ok := findTemplate(f.templates(t, task), "nats.conf")
		if !ok {
			t.Fatal("no template rendering nats.conf")
		}
		for _, want := range []string{`nomadService "nats-cluster"`, `nomadVar "nomad/jobs/nats"`} {
			if !strings.Contains(conf.source, want) {
				t.Errorf("nats.conf template does not use %s", want)
			}
		}
		if args := f.strings(t, config(t, f, task), "args"); !slices.Contains(args, "/"+conf.destination) {
			t.Errorf("nats-server args %q do not name the rendered %s", args, conf.destination)
		}

		// The TLS files nats.conf names are rendered for real, so that
		// the server below loads them.
		tfx := taskFixture(t, f, g, fx)
		tfx.env["NOMAD_SECRETS_DIR"] = t.TempDir()
		renderSecrets(t, f.templates(t, task), tfx, tfx.env["NOMAD_SECRETS_DIR"])
		opts, err := server.ProcessConfigFile(renderFile(t, conf, tfx))
		if err != nil {
			t.Fatalf("nats-server rejects the rendered nats.conf: %v", err)
		}
		// NewServer validates what parsing does not (operator mode and the
		// preloaded accounts, lame duck vs. its grace period, the cluster)
		// without binding a port or touching store_dir.
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("nats-server rejects the rendered options: %v", err)
		}
		s.Shutdown()
		if opts.Port != ports["client"].inner() || opts.Cluster.Port != ports["cluster"].inner() || opts.HTTPPort != ports["monitor"].inner() {
			t.Errorf("nats.conf listens on %d/%d/%d, the job maps %+v", opts.Port, opts.Cluster.Port, opts.HTTPPort, ports)
		}
		if !opts.JetStream || opts.StoreDir == "" {
			t.Error("JetStream is not enabled with a store_dir")
		}
		mounted := false
		for _, m := range blocks(task.Body, "volume_mount") {
			mounted = mounted || (f.str(t, m.Body, "volume") == volume && f.str(t, m.Body, "destination") == opts.StoreDir)
		}
		if !mounted {
			t.Errorf("host volume %q is not mounted at store_dir %s", volume, opts.StoreDir)
		}
		if !strings.HasPrefix(opts.ServerName, "nats-") || opts.Cluster.Name == "" {
			t.Errorf("server_name %q, cluster name %q", opts.ServerName, opts.Cluster.Name)
		}
		if len(opts.Routes) != 3 {
			t.Errorf("%d routes, want one per registered nats-cluster service (3)", len(opts.Routes))
		}
		for _, r := range opts.Routes {
			if pw, _ := r.User.Password(); r.User.Username() != opts.Cluster.Username || pw != opts.Cluster.Password {
				t.Errorf("route %s does not carry the cluster's route credentials", r.Redacted())
			}
		}
		if len(opts.TrustedOperators) != 1 || opts.SystemAccount == "" {
			t.Error("nats.conf is not in operator (JWT) mode with a system account")
		}
		// Clients over TLS; routes over mutual TLS.
		if tc := opts.TLSConfig; tc == nil || len(tc.Certificates) != 1 {
			t.Error("nats.conf does not serve clients over TLS")
		}
		if rc := opts.Cluster.TLSConfig; rc == nil || rc.ClientAuth != tls.RequireAndVerifyClientCert || rc.RootCAs == nil {
			t.Error("nats.conf does not route over mutual TLS")
		}
		// The monitoring endpoints, which need no credentials, are not
		// published on every interface.
		for _, n := range blocks(g.Body, "network") {
			for _, p := range blocks(n.Body, "port") {
				if p.Labels[0] == "monitor" && f.str(t, p.Body, "host_network") == "" {
					t.Error(`port "monitor" is published on every host interface: give it a host_network`)
				}
			}
		}

		// Lame duck: SIGUSR2 starts it, and Nomad must not SIGKILL the
		// server before it has handed off its leaderships and clients.
		if opts.LameDuckDuration <= 0 || !strings.Contains(conf.data, "lame_duck_duration") {
			t.Error("nats.conf sets no lame_duck_duration")
		}
		if sig := f.str(t, task.Body, "kill_signal"); sig != "SIGUSR2" {
			t.Errorf("kill_signal %q, want SIGUSR2 (lame-duck mode)", sig)
		}
		if kt := f.duration(t, task.Body, "kill_timeout"); kt < opts.LameDuckDuration+10*time.Second {
			t.Errorf("kill_timeout %s, want >= lame_duck_duration %s + 10s", kt, opts.LameDuckDuration)
		}

		// Before the other servers have registered, the file must still load.
		alone := tfx
		alone.services = nil
		if _, err := server.ProcessConfigFile(renderFile(t, conf, alone)); err != nil {
			t.Errorf("nats.conf without registered routes: %v", err)
		}
	}
}

func defaultNATSPort(t *testing.T) int {
	t.Helper()
	u, err := url.Parse(natsutil.DefaultURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("natsutil.DefaultURL %q: %v", natsutil.DefaultURL, err)
	}
	return p
}

func TestScheduler(t *testing.T) {
	t.Parallel()
	f := parseJobFile(t, schedulerFile)
	fx := clusterFixture(t, parseJobFile(t, natsFile))
	groups := blocks(f.job.Body, "group")
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1", len(groups))
	}
	g := groups[0]
	if n := f.num(t, g.Body, "count", 1); n != 2 {
		t.Errorf("count %d, want 2 (one leads, one stands by)", n)
	}
	if !f.distinctHosts(t, g) {
		t.Error("the two schedulers may share a host: no distinct_hosts")
	}
	task := blocks(g.Body, "task")[0]
	if sub := firstArg(t, f, task); sub != "scheduler" {
		t.Errorf("first argument %q, want the scheduler subcommand", sub)
	}
	checkSandrunTask(t, f, g, task, fx)
}

func TestWorker(t *testing.T) {
	t.Parallel()
	f := parseJobFile(t, workerFile)
	fx := clusterFixture(t, parseJobFile(t, natsFile))
	example, err := app.LoadFile("../../examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exampleDrain := example.Worker.WithDefaults()

	queues := map[string][]string{}
	for class, wantKind := range map[string]string{"docker": "docker", "hpc": "singularity"} {
		g := labelled(f.job.Body, "group", class)
		if g == nil {
			t.Errorf("no group %q", class)
			continue
		}
		if nc := f.nodeClass(t, g); nc != class {
			t.Errorf("group %q: node class constraint %q, want %q", class, nc, class)
		}
		if f.num(t, g.Body, "count", 1) < 1 {
			t.Errorf("group %q: count below 1", class)
		}
		task := blocks(g.Body, "task")[0]
		if sub := firstArg(t, f, task); sub != "worker" {
			t.Errorf("group %q: first argument %q, want the worker subcommand", class, sub)
		}
		cfg := checkSandrunTask(t, f, g, task, fx)
		if err := cfg.Worker.WithDefaults().Validate(); err != nil {
			t.Errorf("group %q: %v", class, err)
		}
		if _, err := cfg.Policy.Engine(); err != nil {
			t.Errorf("group %q: %v", class, err)
		}
		var kinds []string
		for name, b := range cfg.Backends {
			kinds = append(kinds, b.Kind)
			if b.Kind == "local" || b.Kind == "" {
				t.Errorf("group %q: profile %q runs commands on the worker's host", class, name)
			}
		}
		if !slices.Contains(kinds, wantKind) {
			t.Errorf("group %q: backend kinds %q, want a %s profile", class, kinds, wantKind)
		}
		queues[class] = cfg.Worker.WithDefaults().Queues

		// Drain: SIGTERM, then drain_timeout for running jobs, kill_grace
		// for the rest, and time to hand them back before Nomad's SIGKILL.
		w := cfg.Worker.WithDefaults()
		need := max(w.DrainTimeout, exampleDrain.DrainTimeout) + max(w.KillGrace, exampleDrain.KillGrace) + 10*time.Second
		if sig := f.str(t, task.Body, "kill_signal"); sig != "SIGTERM" {
			t.Errorf("group %q: kill_signal %q, want SIGTERM (the worker's drain signal)", class, sig)
		}
		if kt := f.duration(t, task.Body, "kill_timeout"); kt < need {
			t.Errorf("group %q: kill_timeout %s, want >= %s (drain_timeout + kill_grace + 10s)", class, kt, need)
		}

		switch class {
		case "docker":
			if f.str(t, task.Body, "driver") != "docker" {
				t.Error("docker workers: driver is not docker")
			}
			if !mountsDockerSocket(t, f, config(t, f, task)) {
				t.Error("docker workers: the Docker socket is not mounted")
			}
		case "hpc":
			if d := f.str(t, task.Body, "driver"); d != "raw_exec" && d != "exec" {
				t.Errorf("hpc workers: driver %q, want raw_exec or exec (no Docker on HPC nodes)", d)
			}
			if cmd := f.str(t, config(t, f, task), "command"); !strings.HasPrefix(cmd, "/") {
				t.Errorf("hpc workers: command %q is not an absolute path", cmd)
			}
			for name, b := range cfg.Backends {
				if b.Kind == "singularity" && (!strings.HasPrefix(b.Scratch, "/scratch") || !strings.HasPrefix(b.Binary, "/")) {
					t.Errorf("hpc profile %q: scratch %q, binary %q", name, b.Scratch, b.Binary)
				}
			}
			if !needsScratch(t, f, g) {
				t.Error("hpc workers may land on a node without /scratch: no scratch host volume or constraint")
			}
		}
	}
	for _, q := range queues["docker"] {
		if slices.Contains(queues["hpc"], q) {
			t.Errorf("queue %q is served by docker and hpc workers: each fails the other's jobs (missing profile)", q)
		}
	}
}

func mountsDockerSocket(t *testing.T, f *jobFile, cfg *hclsyntax.Body) bool {
	t.Helper()
	for _, m := range blocks(cfg, "mount") {
		if f.str(t, m.Body, "target") == "/var/run/docker.sock" {
			return true
		}
	}
	return slices.ContainsFunc(f.strings(t, cfg, "volumes"), func(v string) bool {
		return strings.HasSuffix(v, ":/var/run/docker.sock")
	})
}

func needsScratch(t *testing.T, f *jobFile, g *hclsyntax.Block) bool {
	t.Helper()
	for _, v := range blocks(g.Body, "volume") {
		if f.str(t, v.Body, "type") == "host" && strings.Contains(f.str(t, v.Body, "source"), "scratch") {
			return true
		}
	}
	for _, c := range blocks(g.Body, "constraint") {
		if strings.Contains(f.source(c.Body.Range()), "scratch") {
			return true
		}
	}
	return false
}

// checkSandrunTask renders a sandrun daemon's configuration and checks it
// against sandrun's own loader, the NATS job and the metrics convention.
func checkSandrunTask(t *testing.T, f *jobFile, g, task *hclsyntax.Block, fx fixture) app.Config {
	t.Helper()
	where := f.name + ": group " + g.Labels[0]
	ts := f.templates(t, task)
	conf, ok := findTemplate(ts, "sandrun.yaml")
	if !ok {
		t.Fatalf("%s: no template rendering sandrun.yaml", where)
	}
	args := f.source(attr(config(t, f, task), "args").Expr.Range())
	if !strings.Contains(args, `"--config"`) || !strings.Contains(args, strings.TrimPrefix(conf.destination, "local/")) {
		t.Errorf("%s: args %s do not pass --config %s", where, args, conf.destination)
	}
	if !strings.Contains(conf.source, `nomadService "nats"`) {
		t.Errorf("%s: nats.url is not built from the nats service", where)
	}

	tfx := taskFixture(t, f, g, fx)
	cfg, err := app.LoadFile(renderFile(t, conf, tfx))
	if err != nil {
		t.Fatalf("%s: sandrun rejects the rendered config: %v", where, err)
	}
	for _, d := range cfg.Deprecations {
		t.Errorf("%s: the rendered config is in a deprecated form: %s", where, d)
	}
	if cfg.Layout.Replicas != 3 {
		t.Errorf("%s: layout.replicas %d, want 3 on the 3-node cluster", where, cfg.Layout.Replicas)
	}
	urls := strings.Split(cfg.NATS.URL, ",")
	if len(urls) != len(fx.services["nats"]) {
		t.Errorf("%s: nats.url %q does not list every nats server", where, cfg.NATS.URL)
	}
	for _, u := range urls {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "nats" || pu.Port() != strconv.Itoa(defaultNATSPort(t)) {
			t.Errorf("%s: nats.url entry %q", where, u)
		}
	}
	creds, ok := findTemplate(ts, strings.TrimPrefix(cfg.NATS.Creds, tfx.env["NOMAD_SECRETS_DIR"]+"/"))
	if cfg.NATS.Creds == "" || !ok || !strings.HasPrefix(creds.destination, "secrets/") {
		t.Errorf("%s: nats.creds %q is not rendered by a template into secrets/", where, cfg.NATS.Creds)
	}
	// The servers speak TLS: the daemon verifies them with their CA.
	ca, ok := findTemplate(ts, strings.TrimPrefix(cfg.NATS.TLSCA, tfx.env["NOMAD_SECRETS_DIR"]+"/"))
	if cfg.NATS.TLSCA == "" || !ok || !strings.HasPrefix(ca.destination, "secrets/") {
		t.Errorf("%s: nats.tls_ca %q is not rendered by a template into secrets/", where, cfg.NATS.TLSCA)
	} else if out, err := render(ca, tfx); err != nil || !strings.Contains(out, "BEGIN CERTIFICATE") {
		t.Errorf("%s: the rendered CA is not a certificate: %v", where, err)
	}
	_, mport, err := net.SplitHostPort(cfg.MetricsAddr)
	if err != nil || mport != strconv.Itoa(metricsPort) {
		t.Errorf("%s: metrics_addr %q, want port %d", where, cfg.MetricsAddr, metricsPort)
	}
	if cfg.Worker.Name == "" {
		t.Errorf("%s: worker.name is not set from the allocation", where)
	}

	// With no NATS server registered yet, sandrun must refuse the file
	// (and exit, to be restarted by Nomad) rather than dial 127.0.0.1.
	none := fx
	none.services = nil
	if _, err := app.LoadFile(renderFile(t, conf, taskFixture(t, f, g, none))); err == nil {
		t.Errorf("%s: with no nats service registered the config still loads", where)
	}
	return cfg
}

// Every sandrun daemon's service exposes the metrics port the convention
// names, tagged for Prometheus, and the example config agrees.
func TestMetricsPortConvention(t *testing.T) {
	t.Parallel()
	example, err := app.LoadFile("../../examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, p, err := net.SplitHostPort(example.MetricsAddr); err != nil || p != strconv.Itoa(metricsPort) {
		t.Errorf("examples/worker.yaml metrics_addr %q, want port %d", example.MetricsAddr, metricsPort)
	}
	seen := map[string]bool{}
	for _, f := range loadJobFiles(t) {
		for _, g := range blocks(f.job.Body, "group") {
			ports := f.ports(t, g)
			for _, s := range f.services(t, g) {
				if s.name != "sandrun-worker" && s.name != "sandrun-scheduler" {
					continue
				}
				seen[s.name] = true
				if s.port != "metrics" {
					t.Errorf("%s: service %q on port %q, want \"metrics\"", f.name, s.name, s.port)
				}
				if p := ports[s.port]; p.inner() != metricsPort {
					t.Errorf("%s: group %q: port %q static %d to %d, want %d", f.name, g.Labels[0], s.port, p.static, p.to, metricsPort)
				}
				if !slices.Contains(s.tags, "prometheus") {
					t.Errorf("%s: service %q is not tagged prometheus", f.name, s.name)
				}
			}
		}
	}
	if !seen["sandrun-worker"] || !seen["sandrun-scheduler"] {
		t.Errorf("services found: %v", seen)
	}
}

// registryHost matches an image reference that names a registry host (a
// first path component with a dot or a port, or localhost).
var registryHost = regexp.MustCompile(`^([^/]*[.:][^/]*|localhost)/`)

func TestImagesNameNoRegistry(t *testing.T) {
	t.Parallel()
	for _, f := range loadJobFiles(t) {
		var refs []string
		for name, v := range f.vars {
			if strings.Contains(name, "image") && !v.IsNull() {
				refs = append(refs, v.AsString())
			}
		}
		for _, g := range blocks(f.job.Body, "group") {
			for _, task := range blocks(g.Body, "task") {
				if f.str(t, task.Body, "driver") == "docker" {
					refs = append(refs, f.str(t, config(t, f, task), "image"))
				}
			}
		}
		for _, ref := range refs {
			if _, rest, ok := strings.Cut(ref, "://"); ok {
				ref = rest // docker://, oras:// of a singularity profile
			}
			if ref == "" || registryHost.MatchString(ref) {
				t.Errorf("%s: image %q names a registry host (or none at all)", f.name, ref)
			}
		}
	}
}
