package daytona

import (
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
)

// TestConformance runs the backend conformance suite against the fake,
// whose commands are real processes on this host.
func TestConformance(t *testing.T) {
	f := daytonatest.Start(t)
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		return newBackend(t, fakeConfig(f))
	}, backendtest.Options{ProcessGone: backendtest.HostProcessGone,
		HostVisible: "the fake API's sandboxes are host processes",
		Refuses:     append([]string{"session"}, backendtest.ContainerRefusals("image")...)})
}
