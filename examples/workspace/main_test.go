package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestWorkspaceExample runs the example against an embedded server and a
// worker with the local backend: three steps submitted at once build on
// each other in one workspace, which is then listed and removed.
func TestWorkspaceExample(t *testing.T) {
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	reg := backends.NewRegistry()
	root := t.TempDir()
	lb, err := local.New(local.Config{WorkspaceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, st, sandruntest.FastConfig(), reg)
	var out bytes.Buffer
	if err := run(sandruntest.Ctx(t), s.ClientURL(), "example", false, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"step 1: succeeded", "step 3: succeeded words: 9\n", "workspace example on profile local", "workspace example removed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
