package daytona

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// TestWrongKeyIsPermanent: the API answers 401 to a wrong key; Validate
// and Run fail with ErrPermanent, naming api_key_env and never the key.
func TestWrongKeyIsPermanent(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	const wrong = "dtn_wrong_key_0123456789"
	cfg := fakeConfig(f)
	cfg.LookupEnv = func(string) (string, bool) { return wrong, true }
	b := newBackend(t, cfg)

	err := b.Validate(t.Context())
	if !errors.Is(err, backends.ErrPermanent) || errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Validate: %v; want ErrPermanent", err)
	}
	for _, s := range []string{"401", DefaultAPIKeyEnv} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("Validate: %q does not mention %s", err, s)
		}
	}
	_, err = b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "true"}, backends.Output{})
	if !errors.Is(err, backends.ErrPermanent) {
		t.Fatalf("Run: %v; want ErrPermanent", err)
	}
	for _, e := range []error{err, b.Validate(t.Context())} {
		if strings.Contains(e.Error(), wrong) || strings.Contains(e.Error(), f.APIKey) {
			t.Errorf("error shows a key: %v", e)
		}
	}
	if len(f.Created()) != 0 {
		t.Errorf("a sandbox was created with a wrong key")
	}
}

// TestUnreachableIsUnavailable: connection failures are ErrUnavailable.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	cfg := fakeConfig(f)
	f.Close()
	sandboxtest.ValidateUnavailable(t, newBackend(t, cfg))
}
