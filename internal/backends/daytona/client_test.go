package daytona

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// TestRetries: idempotent calls are retried on 5xx (then ErrUnavailable),
// every call on 429, and a create that failed with a 5xx is not retried,
// since the sandbox may exist. Every call carries the key and the
// organization.
func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		statuses []int // The answers, in turn; the last one repeats.
		create   bool
		calls    int32
		wantErr  error // nil: success, unless wantCode
		wantCode int   // an error with this status, neither permanent nor unavailable
	}{
		{"get recovers", []int{503, 502, 200}, false, 3, nil, 0},
		{"get gives up", []int{500}, false, httpsandbox.MaxAttempts, backends.ErrUnavailable, 0},
		{"create not retried", []int{503, 200}, true, 1, backends.ErrUnavailable, 0},
		{"create after 429", []int{429, 200}, true, 2, nil, 0},
		{"not found", []int{404}, false, 1, nil, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1))
				if r.Header.Get("Authorization") != "Bearer k-123456" || r.Header.Get("X-Daytona-Organization-ID") != "org-1" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				status := tt.statuses[min(n, len(tt.statuses))-1]
				if status == 429 {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"id":"sb-1","state":"started"}`))
			}))
			defer srv.Close()
			b := newBackend(t, Config{APIURL: srv.URL, OrganizationID: "org-1",
				LookupEnv: func(string) (string, bool) { return "k-123456", true }})
			var err error
			if tt.create {
				_, err = b.api.create(t.Context(), createSandbox{})
			} else {
				_, err = b.api.get(t.Context(), "sb-1")
			}
			if got := calls.Load(); got != tt.calls {
				t.Errorf("%d calls, want %d", got, tt.calls)
			}
			switch {
			case tt.wantCode != 0:
				if !httpsandbox.HasStatus(err, tt.wantCode) || errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrPermanent) {
					t.Errorf("err %v; want a plain %d", err, tt.wantCode)
				}
			case tt.wantErr == nil && err != nil, tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("err %v; want %v", err, tt.wantErr)
			}
		})
	}
}
