// Package sshtest starts real OpenSSH servers on loopback for tests, with
// the keys, certificates, agents and cuttable TCP proxies that the tests of
// the SSH backend need:
//
//	user := sshtest.NewKey(t, t.TempDir(), "user", "")
//	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{user}})
//	// dial srv.Addr as srv.User with user.Signer, trusting srv.KnownHostsLine()
//
// It runs Debian's /usr/sbin/sshd (package openssh-server) and ssh-agent
// (openssh-client). Where they are missing the test is skipped, except
// under CI (CI=true), where it fails. Every process and listener it starts
// is ended by the test's cleanup.
//
// sshd run by an ordinary user can only log in that same user, so tests
// log in as the user that runs them (Server.User). As root, sshd needs its
// privilege-separation directory /run/sshd, which Start creates.
package sshtest

import (
	"bytes"
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/testenv"
)

// startTimeout bounds how long a helper process may take to become ready.
const startTimeout = 15 * time.Second

var (
	// errExited reports that a helper process ended before it was ready.
	errExited = errors.New("process exited")
	// errTimeout reports that a helper process was not ready in time.
	errTimeout = errors.New("timed out")
)

// requireProgram returns the path of program, or skips the test when it is
// missing (fails it under CI).
func requireProgram(t testing.TB, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		testenv.Missing(t, "sshtest: %s not available: %v", program, err)
	}
	return path
}

// output collects a helper process's output and lets a test wait for a
// string to appear in it.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed (and replaced) on every Write
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

// Write appends p and wakes the waiters.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// String returns everything written so far.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output contains s. It returns errExited once
// exited is closed without s written, and errTimeout after timeout.
func (o *output) waitFor(s string, exited <-chan struct{}, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		o.mu.Lock()
		found := bytes.Contains(o.buf.Bytes(), []byte(s))
		changed := o.changed
		o.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-exited:
			// exec.Cmd copies all output before Wait returns: one last look.
			if bytes.Contains([]byte(o.String()), []byte(s)) {
				return nil
			}
			return errExited
		case <-timer.C:
			return errTimeout
		}
	}
}
