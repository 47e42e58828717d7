package worker_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sandrunBin is the CLI built once for the tests that run workers as
// separate processes (kill -9, SIGSTOP).
var sandrunBin string

func TestMain(m *testing.M) {
	bin, dir, err := sandruntest.BuildCLI(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sandrunBin = bin
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(sandruntest.LeakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
