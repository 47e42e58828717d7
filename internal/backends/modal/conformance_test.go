package modal

import (
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
)

// TestConformance runs the backend conformance suite against the fake,
// whose execs are host processes: the suite checks by pid that stopping a
// job, or its end, leaves none of its processes running.
func TestConformance(t *testing.T) {
	f := modaltest.Start(t)
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		return newBackend(t, fakeConfig(t, f))
	}, backendtest.Options{ProcessGone: backendtest.HostProcessGone,
		HostVisible: "the fake API's sandboxes are host processes",
		// The fake holds each exec's processes to the sandbox's
		// memory_mb_max, and to nothing when it is not sent.
		Limited: func(t *testing.T) (backends.Backend, int64, string) {
			cfg := fakeConfig(t, f)
			cfg.MemoryMiB = 64
			return newBackend(t, cfg), 64 << 20, ""
		},
		Refuses: backendtest.ContainerRefusals("network")})
	if live := f.Live(); len(live) != 0 {
		t.Errorf("%d sandboxes still live after the suite: %+v", len(live), live)
	}
}
