package modal

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
)

// TestManagedGateway runs the real readiness check — an authenticated
// call through the SDK — against a fake gateway, with a second fake as
// Modal for direct credentials: auto mode takes the gateway when its
// token opens it and runs jobs there, falls back to direct when it does
// not, and managed mode then refuses to start.
func TestManagedGateway(t *testing.T) {
	t.Parallel()
	gw, direct := modaltest.Start(t), modaltest.Start(t)
	config := func(t *testing.T, mode Mode, gwSecret string) Config {
		return Config{
			Mode: mode, ServerURL: direct.URL, Gateway: Gateway{URL: gw.URL},
			ConfigPath: filepath.Join(t.TempDir(), "absent.toml"), Image: "alpine:3.21", StateDir: t.TempDir(),
			LookupEnv: env{
				envTokenID: direct.TokenID, envTokenSecret: direct.TokenSecret,
				"SANDRUN_MODAL_GATEWAY_TOKEN_ID": gw.TokenID, "SANDRUN_MODAL_GATEWAY_TOKEN_SECRET": gwSecret,
			}.lookup,
		}
	}
	runOn := func(t *testing.T, b *Backend, want *modaltest.Fake) {
		t.Helper()
		before := len(want.Sandboxes())
		if _, err := b.Run(t.Context(), backends.Spec{Command: "true"}, backends.Output{}); err != nil {
			t.Fatal(err)
		}
		if len(want.Sandboxes()) != before+1 {
			t.Errorf("the job did not run on the expected server")
		}
	}

	t.Run("ready", func(t *testing.T) {
		b := newBackend(t, config(t, ModeAuto, gw.TokenSecret))
		if r := b.Resolution(); r.Using != ModeManaged || r.ServerURL != gw.URL || r.Fallback != "" {
			t.Fatalf("Resolution %v, want managed on %s", r, gw.URL)
		}
		runOn(t, b, gw)
	})
	t.Run("auto falls back", func(t *testing.T) {
		b := newBackend(t, config(t, ModeAuto, "as-wrong"))
		r := b.Resolution()
		if r.Using != ModeDirect || r.ServerURL != direct.URL || !strings.Contains(r.Fallback, "not ready") || !strings.Contains(r.Fallback, "Unauthenticated") {
			t.Fatalf("Resolution %v, want direct on %s after the gateway refused its token", r, direct.URL)
		}
		runOn(t, b, direct)
	})
	t.Run("managed fails closed", func(t *testing.T) {
		b, err := New(config(t, ModeManaged, "as-wrong"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		before := len(direct.Sandboxes())
		err = b.Validate(t.Context())
		if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "mode managed") || strings.Contains(err.Error(), direct.TokenSecret) {
			t.Fatalf("Validate: %v; want a managed ResolveError", err)
		}
		if _, err := b.Run(t.Context(), backends.Spec{Command: "true"}, backends.Output{}); !errors.Is(err, backends.ErrUnavailable) {
			t.Errorf("Run: %v; want ErrUnavailable", err)
		}
		if n := len(direct.Sandboxes()) - before; n != 0 {
			t.Errorf("direct server ran %d sandboxes; the managed profile must not fall back", n)
		}
	})
}
