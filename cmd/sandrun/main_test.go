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
	bin, dir, err := sandruntest.BuildCLI(false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workerBin = bin
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
