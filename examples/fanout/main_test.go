package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestFanout runs the example against an embedded server and a worker:
// 100 commands fanned out, every result gathered.
func TestFanout(t *testing.T) {
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	var out bytes.Buffer
	if err := run(sandruntest.Ctx(t), s.ClientURL(), 100, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// Sum of i² for i in 0..99.
	if !strings.Contains(out.String(), "100/100 succeeded; sum of outputs 328350") {
		t.Fatalf("output:\n%s", out.String())
	}
}
