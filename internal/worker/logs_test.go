package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/policy"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
	"github.com/sandrun/sandrun/internal/worker"
)

// TestJobLogLinesAreStructured: with JSON logs at debug level, every line
// about a job names the job, its attempt, queue, backend and worker, and
// no line shows a secret env value.
func TestJobLogLinesAreStructured(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var out testenv.Buffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.New(policy.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var handled sandruntest.Handled
	w, err := worker.New(sandruntest.FastConfig(), worker.Deps{Store: e.st, Backends: reg, Policy: pol, Metrics: metrics.New(), Logger: log, Secrets: sandruntest.SecretsKey(t), Handled: handled.Add})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	sandruntest.WaitSealKey(t, e.st)

	const secret = "hunter2-do-not-log"
	for _, spec := range []jobs.Spec{
		{Command: "echo ok", Env: map[string]string{"TOKEN": secret}, SecretEnv: []string{"TOKEN"}},
		{Command: "exit 1", MaxAttempts: 2, Retry: &jobs.Backoff{Initial: jobs.Duration(200 * time.Millisecond)},
			Env: map[string]string{"TOKEN": secret}, SecretEnv: []string{"TOKEN"}},
	} {
		s, err := e.c.Submit(e.ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		r := sandruntest.WaitResult(t, e.c, s.ID, time.Minute)
		// The "job finished" line follows the commit: wait until the
		// worker is done with each attempt's message.
		handled.Wait(t, s.ID, r.Attempt, 30*time.Second)
	}
	if strings.Contains(out.String(), secret) {
		t.Fatalf("a secret reached the log:\n%s", out.String())
	}
	jobLines := 0
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		if _, ok := line["job"]; !ok || line["role"] != nil {
			continue
		}
		jobLines++
		for _, k := range []string{"attempt", "queue", "backend", "worker"} {
			if _, ok := line[k]; !ok && !strings.HasPrefix(line["msg"].(string), "claim:") {
				t.Errorf("line lacks %q: %s", k, sc.Text())
			}
		}
	}
	if jobLines < 4 { // claimed, finished; claimed, retry, claimed, finished
		t.Fatalf("only %d job lines:\n%s", jobLines, out.String())
	}
}
