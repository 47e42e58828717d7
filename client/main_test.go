package client_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, sandruntest.LeakOptions()...) }
