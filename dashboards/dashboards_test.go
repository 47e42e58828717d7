package dashboards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/dashboards"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
	"github.com/sandrun/sandrun/internal/testenv"
)

const rulesFile = "../deploy/prometheus/sandrun-rules.yml"

// TestFilesMatchDefinitions: the committed JSON is what the definitions
// render (run go generate ./dashboards after changing them).
func TestFilesMatchDefinitions(t *testing.T) {
	for _, d := range dashboards.All {
		want, err := dashboards.Render(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dashboards.FileName(d))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from its definition (%v): run go generate ./dashboards", dashboards.FileName(d), err)
		}
	}
}

// TestOnlyTheDatasourceVariable: every dashboard file parses, and every
// data source it names is the ${datasource} variable.
func TestOnlyTheDatasourceVariable(t *testing.T) {
	files, _ := filepath.Glob("*.json")
	if len(files) != len(dashboards.All) {
		t.Fatalf("%d JSON files, %d dashboards", len(files), len(dashboards.All))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var model any
		if err := json.Unmarshal(data, &model); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if k == "datasource" {
						ds, _ := x.(map[string]any)
						if ds["uid"] != "${datasource}" || ds["type"] != "prometheus" {
							t.Errorf("%s: %s.datasource is %v, want the ${datasource} variable", f, path, x)
						}
						continue
					}
					walk(path+"."+k, x)
				}
			case []any:
				for i, x := range v {
					walk(fmt.Sprintf("%s[%d]", path, i), x)
				}
			}
		}
		walk("", model)
	}
}

// TestRulesPassPromtool runs promtool on the alert rules.
func TestRulesPassPromtool(t *testing.T) {
	promtool := need(t, "promtool")
	out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// need finds a program of Debian's prometheus package; missing, it fails
// the test under CI and skips it elsewhere.
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Missing(t, "%s is missing: install Debian's prometheus package", name)
	}
	return p
}

// freePort picks a loopback address below the ephemeral range, where no
// outgoing connection of a parallel test takes the port before the bind.
func freePort(t *testing.T) string {
	t.Helper()
	p, err := natsutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// rule is one alerting rule of the rules file.
type rule struct {
	Alert string `yaml:"alert"`
	Expr  string `yaml:"expr"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestEveryQueryReturnsData runs sandrun dev's roles in process (the
// embedded server, a worker with a local and a singularity profile, the
// scheduler) with Prometheus scraping them every second, runs jobs that
// succeed, fail, time out, are denied, are retried, die into the DLQ and
// run on the singularity profile, then evaluates every panel query and
// every alert expression through Prometheus's HTTP API: each panel
// returns data; each alert expression is valid; the DLQ-growth and
// timeout alerts fire.
func TestEveryQueryReturnsData(t *testing.T) {
	promBin := need(t, "prometheus")
	fake := apptainertest.Install(t)
	dir := t.TempDir()
	metricsAddr := freePort(t)

	srv, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	cfgFile := filepath.Join(dir, "sandrun.yaml")
	writeFile(t, cfgFile, fmt.Sprintf(`backends:
  local: {kind: local}
  hpc: {kind: singularity, binary: %s, scratch: %s, image: "docker://alpine:3.20", cache_max_images: 1}
`, fake.Bin, filepath.Join(dir, "scratch")))
	cfg, err := app.LoadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL, cfg.MetricsAddr = srv.ClientURL(), metricsAddr
	cfg.Worker.Slots = 4
	cfg.Collectors = append(cfg.Collectors, metrics.NewServerCollector(natsutil.Stats(srv)))
	cfg.Schedules = []scheduler.Schedule{{Name: "heartbeat", Cron: "@every 2s", Job: jobs.Spec{Command: "true"}}}

	ctx, cancel := context.WithCancel(context.Background())
	storeCh := make(chan *jobs.Store, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- app.Run(ctx, cfg, app.Roles{Worker: true, Scheduler: true}, slog.New(slog.NewTextHandler(io.Discard, nil)),
			func(st *jobs.Store, _ *metrics.Metrics) { storeCh <- st })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("sandrun: %v", err)
		}
	})
	var st *jobs.Store
	select {
	case st = <-storeCh:
	case err := <-runErr:
		t.Fatalf("sandrun: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("sandrun did not start")
	}
	c := client.New(st)

	// Prometheus first, so that the counters' zeros are scraped before
	// the jobs move them.
	promAddr := freePort(t)
	promCfg := filepath.Join(dir, "prometheus.yml")
	writeFile(t, promCfg, fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%s]
scrape_configs:
  - job_name: sandrun
    static_configs: [{targets: ["%s"]}]
`, mustAbs(t, rulesFile), metricsAddr))
	prom := exec.Command(promBin, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promLog := &testenv.Buffer{}
	prom.Stdout, prom.Stderr = promLog, promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Process.Kill(); _ = prom.Wait() })
	// The zeros the alerts built for the scenario grow from: a delta or
	// an increase needs a sample from before the change.
	waitQuery(t, promAddr, promLog, `up{job="sandrun"} == 1`, `sandrun_dlq_messages == 0`,
		`sandrun_script_timeouts_total{backend="hpc"} == 0`)

	alpine := &backends.ContainerOptions{Image: "docker://alpine:3.20"}
	debian := &backends.ContainerOptions{Image: "docker://debian:12"}
	scenario := []jobs.Spec{
		{Command: "echo ok"},
		{Command: "exit 3", MaxAttempts: 1},
		{Command: "sleep 30", Timeout: jobs.Duration(time.Second), MaxAttempts: 1},
		{Command: "rm -rf / --no-preserve-root"},
		{Command: `f=` + filepath.Join(dir, "flaky") + `; [ -e $f ] && exit 0; touch $f; exit 1`, MaxAttempts: 2,
			Retry: &jobs.Backoff{Initial: jobs.Duration(500 * time.Millisecond)}},
		{Command: "exit 1", MaxAttempts: 2, Retry: &jobs.Backoff{Initial: jobs.Duration(500 * time.Millisecond)}},
		{Backend: "hpc", Command: "echo in a container", Container: alpine},
		{Backend: "hpc", Command: "echo again", Container: alpine},
		{Backend: "hpc", Command: "echo other image", Container: debian},
		// On the hpc profile, where the heartbeat schedule's jobs do not
		// dilute it, this timeout is a quarter of the jobs.
		{Backend: "hpc", Command: "sleep 30", Container: debian, Timeout: jobs.Duration(time.Second), MaxAttempts: 1},
	}
	for _, spec := range scenario {
		s, err := c.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		sandruntest.WaitResult(t, c, s.ID, time.Minute)
	}
	// The JetStream figures are a snapshot cached for 5 s, and a rate
	// needs two samples: wait until Prometheus has scraped what every
	// panel and the alerts built for the scenario need, then check them
	// one by one (a timeout leaves the reporting to the checks).
	subst := strings.NewReplacer("$queue", ".*", "$backend", ".*", "$__rate_interval", "1m")
	alerts := readRules(t)
	mustFire := []string{"SandrunDLQGrowing", "SandrunScriptTimeoutsHigh"}
	var exprs []string
	for _, r := range alerts {
		if slices.Contains(mustFire, r.Alert) {
			exprs = append(exprs, r.Expr)
		}
	}
	for _, d := range dashboards.All {
		for _, p := range d.Panels {
			for _, e := range p.Exprs {
				exprs = append(exprs, subst.Replace(e))
			}
		}
	}
	if ok, why := sandruntest.Poll(time.Minute, func() (bool, string) { return allReturnData(promAddr, exprs) }); !ok {
		t.Logf("not every query returns data within a minute: %s", why)
	}

	for _, d := range dashboards.All {
		for _, p := range d.Panels {
			for _, e := range p.Exprs {
				if n := query(t, promAddr, subst.Replace(e)); n == 0 {
					t.Errorf("%s / %s: no data for %s", d.Title, p.Title, e)
				}
			}
		}
	}
	fired := map[string]bool{}
	for _, r := range alerts {
		fired[r.Alert] = query(t, promAddr, r.Expr) > 0
	}
	for _, a := range mustFire {
		if !fired[a] {
			t.Errorf("alert %s does not fire in the scenario built for it", a)
		}
	}
	// Prometheus evaluated the rules itself too: all healthy.
	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, "http://"+promAddr+"/api/v1/rules", &rules)
	n := 0
	for _, g := range rules.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %s %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if want := len(alerts); n != want {
		t.Errorf("Prometheus loaded %d rules, the file has %d", n, want)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// query evaluates expr now and returns how many series it returned; a
// query Prometheus refuses fails the test.
func query(t *testing.T, addr, expr string) int {
	t.Helper()
	n, err := evaluate(addr, expr)
	if err != nil {
		t.Errorf("query %s: %v", expr, err)
	}
	return n
}

// evaluate evaluates expr now and returns how many series it returned.
func evaluate(addr, expr string) (int, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	var r struct {
		Status, Error string
		Data          struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s %s", r.Status, r.Error)
	}
	return len(r.Data.Result), nil
}

// allReturnData says whether every expr returns data now, and if not,
// which one does not first.
func allReturnData(addr string, exprs []string) (bool, string) {
	for _, e := range exprs {
		if n, err := evaluate(addr, e); n == 0 {
			return false, fmt.Sprintf("no data for %s (%v)", e, err)
		}
	}
	return true, ""
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
}

// waitQuery waits until every expr returns data.
func waitQuery(t *testing.T, addr string, log *testenv.Buffer, exprs ...string) {
	t.Helper()
	if ok, why := sandruntest.Poll(time.Minute, func() (bool, string) { return allReturnData(addr, exprs) }); !ok {
		t.Fatalf("Prometheus never answered: %s; its log:\n%s", why, log.String())
	}
}
