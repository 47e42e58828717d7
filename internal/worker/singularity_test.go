package worker_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// scrape returns the sample value of the series named exactly (name and
// labels as printed, e.g. `x_total{reason="size"}`), or -1.
func scrape(t *testing.T, addr, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// TestSingularityMetricsOnWorker runs jobs on a worker process with a
// singularity profile (a one-image SIF cache, the fake apptainer) and
// reads the figures they caused on its /metrics: a pull per new image, a
// hit for a reuse, an eviction by size, one by purge, a script timeout.
func TestSingularityMetricsOnWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fake := apptainertest.Install(t)
	scratch := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "worker.yaml")
	cfg := fmt.Sprintf("backends:\n  hpc: {kind: singularity, binary: %s, scratch: %s, image: \"docker://alpine:3.20\", cache_max_images: 1}\n", fake.Bin, scratch)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	w := startProc(t, e.url, "hpc-worker", "--config", cfgFile)
	run := func(spec jobs.Spec) jobs.Result {
		t.Helper()
		spec.Backend, spec.MaxAttempts = "hpc", 1
		s, err := e.c.Submit(e.ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return sandruntest.WaitResult(t, e.c, s.ID, time.Minute)
	}
	steps := []struct {
		spec  jobs.Spec
		state jobs.State
	}{
		{jobs.Spec{Command: "true"}, jobs.StateSucceeded},              // alpine: miss, pull
		{jobs.Spec{Command: "exit 2"}, jobs.StateFailed},               // alpine: hit
		{withImage("docker://debian:12", "true"), jobs.StateSucceeded}, // debian: miss, evicts alpine (size)
	}
	for i, s := range steps {
		if r := run(s.spec); r.State != s.state {
			t.Fatalf("step %d: %s (%s), want %s\n%s", i, r.State, r.Error, s.state, w.logs())
		}
	}
	sifs, _ := filepath.Glob(filepath.Join(scratch, "sif", "images", "*.sif"))
	if len(sifs) != 1 {
		t.Fatalf("cache files %v, want debian's only", sifs)
	}
	if err := os.Remove(sifs[0]); err != nil { // the cluster's purge
		t.Fatal(err)
	}
	if r := run(withImage("docker://debian:12", "true")); r.State != jobs.StateSucceeded { // purged: miss, pull
		t.Fatalf("after purge: %s %s", r.State, r.Error)
	}
	timeout := withImage("docker://debian:12", "sleep 30") // hit
	timeout.Timeout = jobs.Duration(500 * time.Millisecond)
	if r := run(timeout); r.State != jobs.StateTimedOut {
		t.Fatalf("timeout job: %s", r.State)
	}

	for series, want := range map[string]float64{
		`sandrun_sif_cache_misses_total{backend="hpc"}`:                    3,
		`sandrun_sif_cache_hits_total{backend="hpc"}`:                      2,
		`sandrun_sif_pulls_total{backend="hpc",result="ok"}`:               3,
		`sandrun_sif_cache_evictions_total{backend="hpc",reason="size"}`:   1,
		`sandrun_sif_cache_evictions_total{backend="hpc",reason="purged"}`: 1,
		`sandrun_sif_cache_images{backend="hpc"}`:                          1,
		`sandrun_sif_pull_seconds_count{backend="hpc"}`:                    3,
		`sandrun_script_timeouts_total{backend="hpc"}`:                     1,
	} {
		if got := scrape(t, w.metricsAddr, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := scrape(t, w.metricsAddr, `sandrun_sif_cache_bytes{backend="hpc"}`); got <= 0 {
		t.Errorf("sandrun_sif_cache_bytes = %v, want the SIF's size", got)
	}
	if n := len(fake.CallsOf(t, "pull")); n != 3 {
		t.Errorf("the runtime pulled %d times, want 3", n)
	}
}

func withImage(ref, cmd string) jobs.Spec {
	return jobs.Spec{Command: cmd, Container: &backends.ContainerOptions{Image: ref}}
}

// TestTwoWorkersPullOnce: two worker processes sharing a scratch
// directory start jobs of the same image at once; the image is pulled
// once (the pull lock holds across processes), and both jobs run.
func TestTwoWorkersPullOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	fake := apptainertest.Install(t)
	fake.Configure(t, apptainertest.Config{PullDelay: 2 * time.Second})
	scratch := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "worker.yaml")
	cfg := fmt.Sprintf("backends:\n  hpc: {kind: singularity, binary: %s, scratch: %s}\n", fake.Bin, scratch)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startProc(t, e.url, "hpc-a", "--config", cfgFile, "--queues", "qa")
	startProc(t, e.url, "hpc-b", "--config", cfgFile, "--queues", "qb")
	var ids []string
	for _, q := range []string{"qa", "qb"} {
		spec := withImage("docker://pytorch:2.5", "echo ran on "+q)
		spec.Queue, spec.Backend, spec.MaxAttempts = q, "hpc", 1
		s, err := e.c.Submit(e.ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	workers := map[string]bool{}
	for _, id := range ids {
		r := sandruntest.WaitResult(t, e.c, id, time.Minute)
		if r.State != jobs.StateSucceeded {
			t.Fatalf("job %s: %s %s", id, r.State, r.Error)
		}
		workers[r.Worker] = true
	}
	if len(workers) != 2 {
		t.Fatalf("jobs ran on %v: want one on each worker", workers)
	}
	pulls := fake.CallsOf(t, "pull")
	if len(pulls) != 1 {
		t.Fatalf("%d pulls, want 1: %+v", len(pulls), pulls)
	}
	if execs := fake.CallsOf(t, "exec"); len(execs) != 2 || execs[0].PID == execs[1].PID {
		t.Fatalf("execs %+v", execs)
	}
}
