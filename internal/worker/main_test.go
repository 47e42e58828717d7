package worker_test

import (
	"os"
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sandrunBin is the CLI built once for the tests that run workers as
// separate processes (kill -9, SIGSTOP).
var sandrunBin string

func TestMain(m *testing.M) { os.Exit(sandruntest.MainWithCLI(m, true, &sandrunBin)) }
