package scheduler_test

import (
	"os"
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sandrunBin is the CLI, built once for the tests that run schedulers as
// separate processes.
var sandrunBin string

func TestMain(m *testing.M) { os.Exit(sandruntest.MainWithCLI(m, false, &sandrunBin)) }
