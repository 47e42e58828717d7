package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeJSONNamesTheField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, field, msg string
	}{
		{`{"command":"true","bogus":1}`, "bogus", "unknown field"},
		{`{"command":5}`, "command", "wrong type"},
		{`{"command":"true","timeout":"soon"}`, "timeout", "invalid duration"},
		{`{"command":"true","timeout":30}`, "timeout", "invalid duration"},
		{`{"command":"true","retry":{"initial":"x"}}`, "retry.initial", "invalid duration"},
		{`{"command":"true","retry":{"max":"1s","initial":"5s"}}`, "retry.max", "must be >="},
		{`{"command":"true","retry":{"jitter":2}}`, "retry.jitter", "0..1"},
		{`{"command":"   "}`, "command", "must not be empty"},
		{`{}`, "command", "must not be empty"},
		{`{"command":"true","queue":"Upper"}`, "queue", "a-z"},
		{`{"command":"true","origin":"martian"}`, "origin", "must be one of"},
		{`{"command":"true","approval":"maybe"}`, "approval", "must be one of"},
		{`{"command":"true","max_attempts":0,"timeout":"-1s"}`, "timeout", "must be > 0"},
		{`{"command":"true","max_attempts":1000}`, "max_attempts", "1..100"},
		{`{"command":"true","env":{"A-B":"x"}}`, "env.A-B", "not a valid variable name"},
		{`{"command":"true","secret_env":["TOKEN"]}`, "secret_env[0]", "not in env"},
		{`{"command":"true","id":"has space"}`, "id", "must be"},
	}
	for _, tc := range cases {
		_, err := DecodeJSON([]byte(tc.in))
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a FieldError", tc.in, err)
			continue
		}
		if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
			t.Errorf("%s: got %q, want field %q with %q", tc.in, err, tc.field, tc.msg)
		}
	}
}

func TestDecodeRejectsOversizeAndTrailingData(t *testing.T) {
	t.Parallel()
	big := `{"command":"` + strings.Repeat("x", MaxSpecBytes) + `"}`
	if _, err := DecodeJSON([]byte(big)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize: %v, want ErrTooLarge", err)
	}
	if _, err := DecodeJSON([]byte(`{"command":"true"} {"command":"x"}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	if _, err := DecodeJSON([]byte(`[1,2]`)); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("array: %v", err)
	}
}

func TestDecodeYAMLMatchesJSON(t *testing.T) {
	t.Parallel()
	y := `
command: make test
queue: eval
timeout: 90s
env: {A: "1"}
retry: {initial: 1s, max: 1m, factor: 3, no_retry_exit_codes: [2]}
labels: {suite: smoke}
`
	s, err := DecodeYAML([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if s.Command != "make test" || s.Queue != "eval" || s.Timeout.D() != 90*time.Second ||
		s.Retry.Factor != 3 || s.Retry.Max.D() != time.Minute || s.Retry.Retryable(2) || s.Env["A"] != "1" {
		t.Fatalf("decoded %+v", s)
	}
	if _, err := DecodeYAML([]byte("command: x\ntimeuot: 5s\n")); err == nil || !strings.Contains(err.Error(), "timeuot") {
		t.Fatalf("typo'd key: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s, err := DecodeJSON([]byte(`{"command":"true"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Queue != DefaultQueue || s.Backend != DefaultBackend || s.Timeout.D() != DefaultTimeout ||
		s.MaxAttempts != DefaultMaxAttempts || s.Origin != OriginManual || s.Retry == nil {
		t.Fatalf("defaults not filled: %+v", s)
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: Duration(time.Second), Max: Duration(10 * time.Second), Factor: 2, Jitter: 0.5}
	for next, want := range map[int]time.Duration{2: time.Second, 3: 2 * time.Second, 4: 4 * time.Second, 5: 8 * time.Second, 6: 10 * time.Second, 9: 10 * time.Second} {
		if got := b.Delay(next, 0); got != want {
			t.Errorf("delay before attempt %d = %s, want %s", next, got, want)
		}
	}
	if got := b.Delay(3, 0.999); got < time.Second || got > 2*time.Second {
		t.Errorf("jittered delay %s outside [1s,2s]", got)
	}
}

func TestRedactedHidesSecretsOnly(t *testing.T) {
	t.Parallel()
	s := Spec{Command: "x", Env: map[string]string{"TOKEN": "s3cr3t", "MODE": "fast"}, SecretEnv: []string{"TOKEN"}}
	r := s.Redacted()
	if r.Env["TOKEN"] != Redacted || r.Env["MODE"] != "fast" {
		t.Fatalf("redacted env %v", r.Env)
	}
	if s.Env["TOKEN"] != "s3cr3t" {
		t.Fatal("Redacted changed the original")
	}
}

func TestServerVersionCheck(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{"2.12.0": true, "2.15.3": true, "v2.14.1-beta": true, "2.11.9": false, "2.10.25": false, "": false} {
		err := CheckServerVersion(v)
		if (err == nil) != ok {
			t.Errorf("%q: %v", v, err)
		}
		if err != nil && !errors.Is(err, ErrServerTooOld) {
			t.Errorf("%q: %v is not ErrServerTooOld", v, err)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"command":"true","timeout":"1s","retry":{"initial":"1s"}}`))
	f.Add([]byte(`{"id":"x","env":{"A":"b"},"secret_env":["A"]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeJSON(data)
		if err != nil {
			return
		}
		// Anything accepted is valid and survives a round trip.
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted an invalid spec: %v", err)
		}
	})
}

// TestValidateRefusesWhatAWorkerWouldRefuse: a spec whose encoding is over
// the wire limit, or whose text is not UTF-8, is refused by Validate (the
// client writes nothing), with the field named.
func TestValidateRefusesWhatAWorkerWouldRefuse(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100<<10)
	tests := []struct {
		name  string
		spec  Spec
		field string
	}{
		{"env over the wire limit", Spec{Command: "true", Env: map[string]string{"A": big, "B": big, "C": big}}, "env"},
		{"labels over the wire limit", Spec{Command: "true", Labels: map[string]string{"a": big, "b": big, "c": big}}, "labels"},
		{"command not UTF-8", Spec{Command: "echo \xff"}, "command"},
		{"env value not UTF-8", Spec{Command: "true", Env: map[string]string{"X": "a\xc3"}}, "env.X"},
		{"cwd not UTF-8", Spec{Command: "true", Cwd: "/tmp/\xfe"}, "cwd"},
		{"label not UTF-8", Spec{Command: "true", Labels: map[string]string{"k": "\xff"}}, "labels.k"},
		{"workspace with a path", Spec{Command: "true", Workspace: "../etc"}, "workspace"},
		{"workspace and session", Spec{Command: "true", Workspace: "w", Session: "s"}, "workspace"},
		{"forward_env twice", Spec{Command: "true", ForwardEnv: []string{"A", "A"}}, "forward_env[1]"},
		{"forward_env not a name", Spec{Command: "true", ForwardEnv: []string{"A B"}}, "forward_env[0]"},
	}
	for _, tc := range tests {
		err := tc.spec.WithDefaults().Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.field)
		}
	}
	ok := Spec{Command: "true", Env: map[string]string{"A": big}}.WithDefaults()
	if err := ok.Validate(); err != nil {
		t.Errorf("a 100 KiB env value within the limit: %v", err)
	}
	data, _ := json.Marshal(ok)
	if _, err := DecodeJSON(data); err != nil {
		t.Errorf("what Validate accepts, the worker's decoder must accept: %v", err)
	}
}

// TestDecodeRefusesTextTheDecoderWouldReplace: bytes that are not UTF-8,
// or an escaped lone surrogate, used to reach the worker as U+FFFD, so a
// different command ran than the one written.
func TestDecodeRefusesTextTheDecoderWouldReplace(t *testing.T) {
	t.Parallel()
	bad := [][]byte{
		[]byte("{\"command\":\"rm -rf /tmp/\xff\"}"),
		[]byte(`{"command":"echo \ud800"}`),
		[]byte(`{"command":"echo \uDC00x"}`),
		[]byte(`{"command":"true","env":{"X":"\udbff"}}`),
	}
	for _, b := range bad {
		var fe *FieldError
		if _, err := DecodeJSON(b); !errors.As(err, &fe) || fe.Field != "spec" {
			t.Errorf("%q: %v, want an error naming the spec's text", b, err)
		}
	}
	good := []string{`{"command":"echo \ud83d\ude00"}`, `{"command":"echo é \u00e9"}`, `{"command":"echo \\ud800"}`}
	for _, g := range good {
		if _, err := DecodeJSON([]byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}

// TestWorkspaceKeys: a workspace's places sort in submission order; two
// owners' workspaces of one name are stored apart.
func TestWorkspaceKeys(t *testing.T) {
	t.Parallel()
	a := WorkspaceQueueKey("manual.alice", "w", time.Unix(9, 0), "zzz")
	b := WorkspaceQueueKey("manual.alice", "w", time.Unix(10, 0), "aaa")
	if a >= b || !strings.HasPrefix(a, WorkspaceQueuePrefix("manual.alice", "w")) {
		t.Errorf("places %q and %q: want submission order", a, b)
	}
	if WorkspaceStorage("manual.alice", "w") == WorkspaceStorage("manual.bob", "w") || !strings.HasSuffix(WorkspaceStorage("manual.alice", "w"), "-w") {
		t.Errorf("storage names: %q %q", WorkspaceStorage("manual.alice", "w"), WorkspaceStorage("manual.bob", "w"))
	}
}
