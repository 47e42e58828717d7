package ssh

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
)

// The ssh backend's cost per job against OpenSSH's client on the same
// loopback sshd: go test -run '^$' -bench . ./internal/backends/ssh
// (figures in docs/BENCHMARKS.md).

func benchServer(b *testing.B) (*sshtest.Server, *sshtest.Key, string, string) {
	b.Helper()
	dir := b.TempDir()
	key := sshtest.NewKey(b, dir, "id", "")
	srv := sshtest.Start(b, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}})
	return srv, key, srv.WriteKnownHosts(b), dir
}

// BenchmarkBackendJob runs `true` as a job: launch, output follow, exit.
func BenchmarkBackendJob(b *testing.B) {
	srv, key, kh, dir := benchServer(b)
	be, err := New(Config{Host: "127.0.0.1", Port: srv.Port, User: srv.User, IdentityFiles: []string{key.Path},
		KnownHosts: []string{kh}, RunRoot: filepath.Join(dir, "runs")})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = be.Close() }()
	if err := be.Validate(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		spec := backends.Spec{JobID: fmt.Sprintf("bench-%d", i), Attempt: 1, Command: "true"}
		res, err := be.Run(context.Background(), spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		if err := be.Finished(context.Background(), spec, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenSSHClient runs `true` with `ssh host true`, a new
// connection per job (the usual one-ssh-per-job approach), and over a
// ControlMaster connection (multiplexed, like the backend).
func BenchmarkOpenSSHClient(b *testing.B) {
	srv, key, kh, dir := benchServer(b)
	base := []string{"-i", key.Path, "-o", "UserKnownHostsFile=" + kh, "-o", "BatchMode=yes", "-p", strconv.Itoa(srv.Port)}
	b.Run("NewConnection", func(b *testing.B) {
		for range b.N {
			if out, err := exec.Command("ssh", append(base, srv.User+"@127.0.0.1", "true")...).CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
	})
	b.Run("ControlMaster", func(b *testing.B) {
		mux := append(base, "-o", "ControlMaster=auto", "-o", "ControlPath="+filepath.Join(dir, "cm"), "-o", "ControlPersist=60")
		if out, err := exec.Command("ssh", append(mux, srv.User+"@127.0.0.1", "true")...).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		b.ResetTimer()
		for range b.N {
			if out, err := exec.Command("ssh", append(mux, srv.User+"@127.0.0.1", "true")...).CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
		b.StopTimer()
		_ = exec.Command("ssh", append(mux, "-O", "exit", srv.User+"@127.0.0.1")...).Run()
	})
}
