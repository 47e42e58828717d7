package vercel

import (
	"testing"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestUnquote: JSON string escapes decode as encoding/json decodes them,
// but lone surrogates \udc80-\udcff are the bytes 80-ff, and raw bytes
// pass through.
func TestUnquote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`abc`, "abc"},
		{`\"\\\/\b\f\n\r\t`, "\"\\/\b\f\n\r\t"},
		{`\u00e9\u0000`, "é\x00"},
		{`\ud83d\ude00!`, "😀!"},
		{`\udcff\udc80\udcc3\udca9`, "\xff\x80\xc3\xa9"},
		{`\ud800x`, "\uFFFDx"},
		{`\udc00`, "\uFFFD"},
		{"raw \xff\xfe", "raw \xff\xfe"},
	}
	for _, tt := range tests {
		got, err := unquote([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("unquote(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`\`, `\x`, `\u12`, `\u12zz`} {
		if _, err := unquote([]byte(bad)); err == nil {
			t.Errorf("unquote(%q) succeeded", bad)
		}
	}
}

// TestParseLine: log lines of the usual shape and of another key order
// decode alike; an error line is the server's error.
func TestParseLine(t *testing.T) {
	t.Parallel()
	for _, line := range []string{`{"stream":"stderr","data":"a\udcffb"}`, `{ "data": "a\udcffb", "stream": "stderr" }`} {
		i, data, err := parseLine([]byte(line))
		if err != nil || i != 1 || string(data) != "a\xffb" {
			t.Errorf("parseLine(%s) = %d, %q, %v", line, i, data, err)
		}
	}
	_, _, err := parseLine([]byte(`{"stream":"error","data":{"code":"sandbox_stopped","message":"gone"}}`))
	if err == nil || err.Error() != "log stream: sandbox_stopped: gone" {
		t.Errorf("error line: %v", err)
	}
}

// TestOutputAllBytes: every byte value comes through both streams
// exactly, in the order written.
func TestOutputAllBytes(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	sandboxtest.OutputAllBytes(t, newBackend(t, fakeConfig(f)))
}
