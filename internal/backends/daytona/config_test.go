package daytona

import (
	"strings"
	"testing"
	"time"
)

func intp(n int) *int { return &n }

// TestNewChecksEveryField: New refuses each bad field with an error that
// names it, and never shows the key.
func TestNewChecksEveryField(t *testing.T) {
	t.Parallel()
	const key = "dtn_secret_value_123"
	env := func(k string) (string, bool) {
		if k == DefaultAPIKeyEnv || k == "OTHER_KEY" {
			return key, true
		}
		return "", false
	}
	tests := []struct {
		name string
		cfg  Config
		want string // Substring of the error; "" means no error.
	}{
		{"defaults", Config{}, ""},
		{"auto stop zero", Config{AutoStopMinutes: intp(0)}, "daytona.auto_stop_minutes: 0: must be > 0"},
		{"auto stop negative", Config{AutoStopMinutes: intp(-5)}, "auto_stop_minutes: -5: must be > 0"},
		{"auto stop set", Config{AutoStopMinutes: intp(60)}, ""},
		{"key missing", Config{APIKeyEnv: "NOT_SET_ANYWHERE"}, "api_key_env: NOT_SET_ANYWHERE is not set"},
		{"key env bad name", Config{APIKeyEnv: "1X"}, `api_key_env: "1X" is not an environment variable name`},
		{"other key env", Config{APIKeyEnv: "OTHER_KEY"}, ""},
		{"api url scheme", Config{APIURL: "ftp://x"}, "api_url: \"ftp://x\": want an http(s) URL"},
		{"api url host", Config{APIURL: "https://"}, "api_url"},
		{"image and snapshot", Config{Image: "ubuntu:24.04", Snapshot: "s"}, "image, snapshot: set one, not both"},
		{"image two lines", Config{Image: "a\nRUN x"}, "image: must be one line"},
		{"negative cpu", Config{Image: "x", CPU: -1}, "cpu: -1: must not be negative"},
		{"memory with snapshot", Config{Snapshot: "s", MemoryGB: 2}, "memory_gb: a snapshot fixes the sandbox's resources"},
		{"resources with image", Config{Image: "x", CPU: 2, MemoryGB: 4, DiskGB: 10}, ""},
		{"mode", Config{Mode: "batch"}, `mode: "batch": want session or execute`},
		{"execute mode", Config{Mode: ModeExecute}, ""},
		{"negative timeout", Config{StartTimeout: -time.Second}, "start_timeout: -1s: must not be negative"},
		{"negative poll", Config{PollInterval: -time.Second}, "poll_interval: -1s: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.LookupEnv = env
			b, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = b.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v; want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

// TestNewFillsDefaults: an empty profile gets the documented defaults, in
// a copy.
func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{LookupEnv: func(string) (string, bool) { return "k-123456", true }}
	b := newBackend(t, cfg)
	s := b.cfg
	if s.APIURL != DefaultAPIURL || s.APIKeyEnv != DefaultAPIKeyEnv || s.autoStop != DefaultAutoStopMinutes ||
		s.Mode != ModeSession || s.StartTimeout != DefaultStartTimeout || s.RequestTimeout != DefaultRequestTimeout ||
		s.ExecuteTimeout != DefaultExecuteTimeout || s.PollInterval != DefaultPollInterval {
		t.Errorf("defaults not filled in: %+v", s)
	}
	if cfg.APIURL != "" || cfg.Mode != "" {
		t.Errorf("New changed the caller's Config: %+v", cfg)
	}
	if b.Kind() != "daytona" || !b.Capabilities().Isolated || !b.Capabilities().ResourceLimits || b.Capabilities().PersistentSessions {
		t.Errorf("Kind %q, Capabilities %+v", b.Kind(), b.Capabilities())
	}
}
