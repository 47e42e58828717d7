package worker_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// sandrunBin is the CLI built once for the tests that run workers as
// separate processes (kill -9, SIGSTOP).
var sandrunBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sandrun-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sandrunBin = filepath.Join(dir, "sandrun")
	build := exec.Command("go", "build", "-race", "-o", sandrunBin, "github.com/sandrun/sandrun/cmd/sandrun")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build sandrun:", err)
		os.Exit(1)
	}
	code := 0
	func() {
		defer func() { _ = os.RemoveAll(dir) }()
		goleak.VerifyTestMain(wrapM{m, &code},
			// The embedded server's store and the client's internal
			// flushers finish shortly after Shutdown/Close.
			goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).syncBlocks"),
			goleak.IgnoreAnyFunction("github.com/nats-io/nats.go.(*Conn).flusher"),
			// nats.go v1.55 can start this watcher with a nil status
			// channel when a connection closes during an async publish;
			// it then blocks forever. Library behaviour, not ours.
			goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
		)
	}()
	os.Exit(code)
}

// wrapM lets TestMain clean up after goleak runs the tests.
type wrapM struct {
	m    *testing.M
	code *int
}

func (w wrapM) Run() int { *w.code = w.m.Run(); return *w.code }
