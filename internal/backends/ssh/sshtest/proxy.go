package sshtest

import (
	"testing"

	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

// Proxy is the conformance suite's cuttable TCP proxy (backendtest.Proxy),
// named here too for the tests that put one in front of an sshd.
type Proxy = backendtest.Proxy

// NewProxy starts a proxy to target ("host:port") and registers a cleanup
// that closes it (backendtest.NewProxy).
func NewProxy(t testing.TB, target string) *Proxy { return backendtest.NewProxy(t, target) }
