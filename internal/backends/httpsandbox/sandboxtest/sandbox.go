package sandboxtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// OnlyCreateRequest runs spec on b, within deadline of now unless
// deadline is 0, checks that the job exits with wantExit, and returns the
// one create request the fake received; created returns all it received.
func OnlyCreateRequest[R any](t *testing.T, b backends.Backend, spec backends.Spec, deadline time.Duration, wantExit int, created func() []R) R {
	t.Helper()
	ctx := t.Context()
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		defer cancel()
	}
	res, err := b.Run(ctx, spec, backends.Output{})
	if err != nil || res.ExitCode != wantExit {
		t.Fatalf("Run: %+v, %v; want exit %d", res, err, wantExit)
	}
	list := created()
	if len(list) != 1 {
		t.Fatalf("%d sandboxes created, want 1", len(list))
	}
	return list[0]
}

// CheckMetadata fails the test for each key of want whose value in got
// differs; what names such a key in the message ("label", "tag").
func CheckMetadata(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// RefusesSpecs checks that b fails each of specs with ErrPermanent.
func RefusesSpecs(t *testing.T, b backends.Backend, specs ...backends.Spec) {
	t.Helper()
	for _, spec := range specs {
		if _, err := b.Run(t.Context(), spec, backends.Output{}); !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("%s: %v; want ErrPermanent", spec.JobID, err)
		}
	}
}

// ValidateUnavailable checks that b, whose API no longer answers, fails
// Validate with ErrUnavailable.
func ValidateUnavailable(t *testing.T, b backends.Backend) {
	t.Helper()
	if err := b.Validate(t.Context()); !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Validate against a closed server: %v; want ErrUnavailable", err)
	}
}
