package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestDoctor(t *testing.T) {
	t.Parallel()
	img := dockertest.Image(t, dockertest.Engine(t))
	s := sandruntest.Server(t, "")
	sandruntest.Store(t, s.ClientURL())
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("backends:\n  local: {kind: local}\n  box: {kind: docker, image: "+img+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", good)
	if code != 0 || !strings.Contains(out, "ok    backend box") || !strings.Contains(out, "engine ") ||
		!strings.Contains(out, "0 container(s) the reaper would remove") {
		t.Fatalf("doctor: %d\n%s%s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("backends:\n  box: {kind: docker, image: sandrun-test/missing:0, pull: never}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", bad)
	if code == 0 || !strings.Contains(out, "FAIL  backend box") || !strings.Contains(out, "image:") {
		t.Fatalf("doctor with a missing image: %d\n%s", code, out)
	}
}
