package vercel

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// TestRetries: idempotent calls are retried on 5xx, then fail with
// ErrUnavailable; running a command is not retried on a 5xx, since it may
// have started. Every call carries the token and the team.
func TestRetries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		statuses []int // The answers, in turn; the last one repeats.
		run      bool
		calls    int32
		wantErr  error
	}{
		{"get recovers", []int{503, 200}, false, 2, nil},
		{"get gives up", []int{502}, false, httpsandbox.MaxAttempts, backends.ErrUnavailable},
		{"run not retried", []int{500, 200}, true, 1, backends.ErrUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1))
				if r.Header.Get("Authorization") != "Bearer tok-123456" || r.URL.Query().Get("teamId") != "team_1" {
					w.WriteHeader(http.StatusForbidden)
					return
				}
				w.WriteHeader(tt.statuses[min(n, len(tt.statuses))-1])
				_, _ = w.Write([]byte(`{"session":{"id":"s","status":"running"},"command":{"id":"c","exitCode":null}}`))
			}))
			defer srv.Close()
			b := newBackend(t, Config{APIURL: srv.URL, TeamID: "team_1", ProjectID: "prj_1",
				LookupEnv: envOf(map[string]string{DefaultTokenEnv: "tok-123456"})})
			var err error
			if tt.run {
				_, err = b.api.run(t.Context(), "s", runCommandRequest{Command: "/bin/sh"})
			} else {
				_, err = b.api.session(t.Context(), "s")
			}
			if got := calls.Load(); got != tt.calls {
				t.Errorf("%d calls, want %d", got, tt.calls)
			}
			if (tt.wantErr == nil && err != nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("err %v; want %v", err, tt.wantErr)
			}
		})
	}
}
