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
		Limited:     limited,
		CutLinks: func(t *testing.T) (backends.Backend, func() int) {
			cfg, proxy := proxied(t, daytonatest.Start(t))
			return newBackend(t, cfg), proxy.Cut
		},
		Refuses: append([]string{"session"}, backendtest.ContainerRefusals("image")...)})
}

// limited is the conformance suite's Options.Limited: a profile with an
// image (the API sizes only sandboxes built from one) of 8 GB, on a fake
// that enforces 1/128 of a sandbox's memory: 64 MiB, and 8 MiB for the
// API's default of 1 GB, which a backend that did not send memory_gb
// would get.
func limited(t *testing.T) (backends.Backend, int64, string) {
	f := daytonatest.Start(t)
	f.SetMemoryScale(128)
	cfg := fakeConfig(f)
	cfg.Image, cfg.MemoryGB = "alpine:3.21", 8
	return newBackend(t, cfg), 64 << 20, ""
}
