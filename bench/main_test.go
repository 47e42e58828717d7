package main

import (
	"testing"

	"go.uber.org/goleak"
)

// Every target's close stops its clients' and workers' goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
