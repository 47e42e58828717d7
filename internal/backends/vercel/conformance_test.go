package vercel

import (
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestConformance runs the backend conformance suite against the fake,
// whose commands are real processes on this host.
func TestConformance(t *testing.T) {
	f := verceltest.Start(t)
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		return newBackend(t, fakeConfig(f))
	}, backendtest.Options{ProcessGone: backendtest.HostProcessGone,
		HostVisible: "the fake API's sandboxes are host processes",
		Limited:     limited,
		CutLinks: func(t *testing.T) (backends.Backend, func() int) {
			cfg, proxy := proxied(t, verceltest.Start(t))
			return newBackend(t, cfg), proxy.Cut
		},
		Refuses: append([]string{"session", "workspace"}, backendtest.ContainerRefusals()...)})
}

// limited is the conformance suite's Options.Limited: a profile of 1
// vCPU, whose 2048 MB the fake enforces at 1/32: 64 MiB, and 128 MiB for
// the API's default of 2 vCPUs, which a backend that did not send vcpus
// would get.
func limited(t *testing.T) (backends.Backend, int64, string) {
	f := verceltest.Start(t)
	f.SetMemoryScale(32)
	cfg := fakeConfig(f)
	cfg.VCPUs = 1
	return newBackend(t, cfg), 64 << 20, ""
}
