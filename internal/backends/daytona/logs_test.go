package daytona

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// TestDemux: the marked log splits into stdout and stderr wherever the
// messages break it, markers included; unmarked bytes go to stdout, and
// bytes held back as a possible marker are delivered by the flush.
func TestDemux(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, log, stdout, stderr string
	}{
		{"marked", "\x01\x01\x01out1\n\x02\x02\x02err1\n\x01\x01\x01out2\x02\x02\x02\xff\x00", "out1\nout2", "err1\n\xff\x00"},
		{"unmarked", "plain \x01 text\x01\x01", "plain \x01 text\x01\x01", ""},
		{"empty chunks", "\x01\x01\x01\x02\x02\x02e\x01\x01\x01", "", "e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for cut := 0; cut <= len(tt.log); cut++ {
				for _, step := range []int{1, len(tt.log) + 1} {
					var out, errb bytes.Buffer
					d := newDemux([2]*httpsandbox.Sink{httpsandbox.NewSink(&out, nil), httpsandbox.NewSink(&errb, nil)})
					parts := [][]byte{[]byte(tt.log[:cut]), []byte(tt.log[cut:])}
					for _, p := range parts {
						for len(p) > 0 {
							n := min(step, len(p))
							d.write(p[:n])
							p = p[n:]
						}
					}
					d.flush()
					if out.String() != tt.stdout || errb.String() != tt.stderr {
						t.Fatalf("cut %d step %d: stdout %q stderr %q; want %q %q", cut, step, out.String(), errb.String(), tt.stdout, tt.stderr)
					}
				}
			}
		})
	}
}

// TestShellQuoting: whatever a string holds, sh reads its quoted form
// back as the string.
func TestShellQuoting(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "'", `'\''`, "$(echo x)", "a\nb", `"$HOME"`, "\\", "\xff\x01 \t*"} {
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+shQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh read %q back as %q (%v)", s, out, err)
		}
	}
}

// TestOutputAllBytes: every byte value comes through both streams
// exactly, in the order written (none of them three times in a row).
func TestOutputAllBytes(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	sandboxtest.OutputAllBytes(t, newBackend(t, fakeConfig(f)))
}
