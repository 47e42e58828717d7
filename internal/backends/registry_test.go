package backends

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// down is a backend whose Validate fails with err.
type down struct{ err error }

func (d down) Kind() string                                      { return "down" }
func (d down) Validate(context.Context) error                    { return d.err }
func (d down) Capabilities() Capabilities                        { return Capabilities{} }
func (d down) Run(context.Context, Spec, Output) (Result, error) { return Result{}, d.err }

// TestValidateAllKeepsErrorKinds: the joined error names each profile
// and still answers errors.Is for the kinds the worker acts on.
func TestValidateAllKeepsErrorKinds(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for name, err := range map[string]error{"a": fmt.Errorf("engine: %w", ErrUnavailable), "b": fmt.Errorf("image: %w", ErrPermanent)} {
		if err := r.Add(name, down{err}); err != nil {
			t.Fatal(err)
		}
	}
	err := r.ValidateAll(t.Context())
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrPermanent) {
		t.Errorf("ValidateAll: %v; errors.Is lost the kinds", err)
	}
	if !strings.Contains(err.Error(), "backends.a: engine") || !strings.Contains(err.Error(), "backends.b: image") {
		t.Errorf("ValidateAll: %v; want each profile named", err)
	}
}
