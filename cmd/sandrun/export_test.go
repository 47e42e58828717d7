package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestExportWritesEachEndingOnce: the history export writes every
// finished job once, secrets redacted; run again it resumes after its
// last line (a torn line is written again whole), so a file kept by
// repeated runs holds each ending exactly once.
func TestExportWritesEachEndingOnce(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	const secret = "hunter2-export"
	submit := func(n int) []string {
		var ids []string
		for i := range n {
			spec := jobs.Spec{Command: "echo hi", Env: map[string]string{"TOKEN": secret}, SecretEnv: []string{"TOKEN"}}
			if i%2 == 1 {
				spec.Command, spec.MaxAttempts = "exit 4", 1
			}
			sub, err := c.Submit(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, sub.ID)
		}
		for _, id := range ids {
			sandruntest.WaitResult(t, c, id, 30*time.Second)
		}
		return ids
	}
	file := filepath.Join(t.TempDir(), "history.jsonl")
	export := func() {
		t.Helper()
		if code, _, errOut := sandrun(t, "export", "--nats-url", url, "--out", file); code != 0 {
			t.Fatalf("export: exit %d: %s", code, errOut)
		}
	}
	read := func() []client.HistoryEntry {
		t.Helper()
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		var out []client.HistoryEntry
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), secret) {
				t.Fatalf("a line holds the secret: %s", sc.Text())
			}
			var e client.HistoryEntry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			out = append(out, e)
		}
		return out
	}
	first := submit(6)
	export()
	if got := read(); len(got) != 6 {
		t.Fatalf("first export: %d lines, want 6", len(got))
	}
	export() // nothing new: nothing written
	if got := read(); len(got) != 6 {
		t.Fatalf("second export with nothing new: %d lines, want 6", len(got))
	}
	// A torn last line, as a killed export leaves it.
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"seq":99999,"run":{"spec":`)
	_ = f.Close()
	second := submit(4)
	export()
	got := read()
	want := map[string]jobs.State{}
	for i, id := range append(first, second...) {
		want[id] = jobs.StateSucceeded
		if i%2 == 1 { // both runs alternate, from an even count
			want[id] = jobs.StateFailed
		}
	}
	if len(got) != len(want) {
		t.Fatalf("after more jobs and a torn line: %d lines, want %d", len(got), len(want))
	}
	var last uint64
	for _, e := range got {
		if e.Run.State != want[e.Run.Spec.ID] || e.Run.Result == nil {
			t.Errorf("%s: %s, want %s with its result", e.Run.Spec.ID, e.Run.State, want[e.Run.Spec.ID])
		}
		if e.Seq <= last {
			t.Errorf("seq %d after %d", e.Seq, last)
		}
		last = e.Seq
		delete(want, e.Run.Spec.ID)
	}
	if len(want) != 0 {
		t.Errorf("endings missing from the history: %v", want)
	}
}
