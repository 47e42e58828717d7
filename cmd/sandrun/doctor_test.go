package main

import (
	"encoding/json"
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

// TestDoctorReportsEveryProfile: with three profiles of which the first
// does not even decode, the second does not construct and the third is
// sound, doctor reports all three (and the policy and NATS), exits
// non-zero, and says the same as JSON.
func TestDoctorReportsEveryProfile(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	sandruntest.Store(t, s.ClientURL())
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte(`backends:
  a-cloud: {kind: modal, cpu: 2}
  b-nope: {kind: nope}
  c-local: {kind: local, shell: /bin/sh}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", cfg)
	for _, want := range []string{"FAIL  backend a-cloud", "field cpu not found", "FAIL  backend b-nope", `unknown backend kind "nope"`,
		"ok    backend c-local", "ok    policy", "ok    nats"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q", want)
		}
	}
	if code == 0 || !strings.Contains(errOut, "2 problem(s)") {
		t.Errorf("doctor: exit %d, stderr %q; want non-zero and 2 problems", code, errOut)
	}
	if t.Failed() {
		t.Fatalf("doctor output:\n%s", out)
	}
	code, out, _ = sandrun(t, "doctor", "--nats-url", s.ClientURL(), "--config", cfg, "--json")
	var checks []check
	if err := json.Unmarshal([]byte(out), &checks); err != nil || code == 0 {
		t.Fatalf("doctor --json: exit %d, %v:\n%s", code, err, out)
	}
	got := map[string]bool{}
	for _, ch := range checks {
		got[ch.Check] = ch.OK
	}
	if ok, seen := got["backend a-cloud"]; ok || !seen {
		t.Errorf("--json: a-cloud %v (seen %v), want a failure", ok, seen)
	}
	if ok, seen := got["backend b-nope"]; ok || !seen {
		t.Errorf("--json: b-nope %v (seen %v), want a failure", ok, seen)
	}
	if !got["backend c-local"] || !got["policy"] || !got["nats"] {
		t.Errorf("--json: %v, want c-local, policy and nats ok", got)
	}
}
