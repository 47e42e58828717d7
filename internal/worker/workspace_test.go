package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// plain is a backend that keeps no workspaces.
type plain struct{}

func (plain) Kind() string                   { return "plain" }
func (plain) Validate(context.Context) error { return nil }
func (plain) Capabilities() backends.Capabilities {
	return backends.Capabilities{}
}
func (plain) Run(context.Context, backends.Spec, backends.Output) (backends.Result, error) {
	return backends.Result{}, nil
}

// TestWorkspaceOnLocal: a workspace outlives its jobs and the worker —
// job 1 installs a tool into it, job 2 uses it, the worker is replaced,
// job 3 reads what job 2 wrote — and its jobs run one at a time in the
// order they were submitted, though the worker has slots for all of them.
// A profile that keeps no workspaces fails such a job, saying so.
func TestWorkspaceOnLocal(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	root := t.TempDir()
	registry := func() *backends.Registry {
		reg := backends.NewRegistry()
		lb, err := local.New(local.Config{WorkspaceRoot: root})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add("local", lb); err != nil {
			t.Fatal(err)
		}
		if err := reg.Add("plain", plain{}); err != nil {
			t.Fatal(err)
		}
		return reg
	}
	cfg := sandruntest.FastConfig()
	w := sandruntest.StartWorkerWith(t, st, cfg, registry())
	c := client.New(st)
	ctx := sandruntest.Ctx(t)
	run := func(ws, command string) (jobs.Result, string) {
		t.Helper()
		spec, err := c.Submit(ctx, jobs.Spec{Command: command, Workspace: ws, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := sandruntest.WaitResult(t, c, spec.ID, 60*time.Second)
		var out bytes.Buffer
		if err := c.Output(ctx, r, &out, &out); err != nil {
			t.Fatal(err)
		}
		return r, out.String()
	}
	if r, out := run("agent1", `mkdir -p bin && printf '#!/bin/sh\necho tool-ok\n' > bin/tool && chmod +x bin/tool && pwd`); r.State != jobs.StateSucceeded || !strings.HasPrefix(out, root+"/") {
		t.Fatalf("job 1: %s %q (want it to work in a directory under %s)", r.State, out, root)
	}
	if r, out := run("agent1", `./bin/tool > out.txt && cat out.txt`); r.State != jobs.StateSucceeded || out != "tool-ok\n" {
		t.Fatalf("job 2: %s %q", r.State, out)
	}
	w.Stop()
	sandruntest.StartWorkerWith(t, st, cfg, registry())
	if r, out := run("agent1", `cat out.txt`); r.State != jobs.StateSucceeded || out != "tool-ok\n" {
		t.Fatalf("job 3, on a new worker: %s %q", r.State, out)
	}
	if r, out := run("other", `ls`); r.State != jobs.StateSucceeded || out != "" {
		t.Fatalf("another workspace starts empty: %s %q", r.State, out)
	}

	// Four jobs at once on a worker of four slots: one at a time, in order.
	var ids []string
	for i := range 4 {
		spec, err := c.Submit(ctx, jobs.Spec{Workspace: "serial", MaxAttempts: 1,
			Command: fmt.Sprintf("echo start-%d >> log; sleep 0.3; echo end-%d >> log", i, i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, spec.ID)
	}
	for _, id := range ids {
		if r := sandruntest.WaitResult(t, c, id, 60*time.Second); r.State != jobs.StateSucceeded {
			t.Fatalf("serial job %s: %s %s", id, r.State, r.Error)
		}
	}
	want := "start-0\nend-0\nstart-1\nend-1\nstart-2\nend-2\nstart-3\nend-3\n"
	if r, out := run("serial", `cat log`); r.State != jobs.StateSucceeded || out != want {
		t.Fatalf("the workspace's jobs overlapped or ran out of order:\n%s", out)
	}
	// Every ended job left the workspace's order.
	lister, err := st.State.ListKeysFiltered(ctx, "wsq.>")
	if err != nil {
		t.Fatal(err)
	}
	for k := range lister.Keys() {
		t.Errorf("a place of an ended job is left: %s", k)
	}

	spec, err := c.Submit(ctx, jobs.Spec{Command: "true", Backend: "plain", Workspace: "agent1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, c, spec.ID, 60*time.Second); r.State != jobs.StateFailed || !strings.Contains(r.Error, "workspace: profile plain (plain) keeps no workspaces") {
		t.Fatalf("a workspace on a profile without workspaces: %s %q", r.State, r.Error)
	}
}
