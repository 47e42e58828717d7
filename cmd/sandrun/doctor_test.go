package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestDoctor(t *testing.T) {
	t.Parallel()
	img := dockertest.Image(t, dockertest.Engine(t))
	s := sandruntest.Server(t, "")
	sandruntest.Store(t, s.ClientURL())
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id", "")
	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}})
	lab := fmt.Sprintf("{kind: ssh, host: 127.0.0.1, port: %d, user: %s, identity_files: [%s], known_hosts: [%%s], run_root: %s}",
		srv.Port, srv.User, key.Path, filepath.Join(dir, "runs"))
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("backends:\n  local: {kind: local}\n  box: {kind: docker, image: "+img+"}\n  lab: "+
		fmt.Sprintf(lab, srv.WriteKnownHosts(t))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", good)
	if code != 0 || !strings.Contains(out, "ok    backend box") || !strings.Contains(out, "engine ") ||
		!strings.Contains(out, "0 workload(s) the reaper would remove") ||
		!strings.Contains(out, "ok    backend lab") || !strings.Contains(out, "OpenSSH") || !strings.Contains(out, "0 running") {
		t.Fatalf("doctor: %d\n%s%s", code, out, errOut)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("backends:\n  lab: "+fmt.Sprintf(lab, filepath.Join(dir, "empty_known_hosts"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", unknown)
	if code == 0 || !strings.Contains(out, "FAIL  backend lab") || !strings.Contains(out, "not in known_hosts") {
		t.Fatalf("doctor with an unknown host key: %d\n%s", code, out)
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
