package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// workerBin is the CLI built without the race detector, for the tests
// that need workers fast enough to run thousands of jobs (the batch
// tests); the CLI under test runs in process.
var workerBin string

func TestMain(m *testing.M) {
	// Servers started here record their credentials for the local CLI
	// (natsutil.SaveLocalContext): in a directory of the tests', never
	// the user's.
	cfgDir, err := os.MkdirTemp("", "sandrun-cli-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Setenv("XDG_CONFIG_HOME", cfgDir)
	bin, dir, err := sandruntest.BuildCLI(false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin = bin
	code := m.Run()
	_ = os.RemoveAll(dir)
	_ = os.RemoveAll(cfgDir)
	os.Exit(code)
}
