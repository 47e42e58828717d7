package verceltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// proc is one command the fake runs: the program and its arguments, in a
// process group of its own, with exactly the environment given and an
// empty standard input.
type proc = sandboxtest.Process

// start starts name with args in dir, name looked up on env's PATH, its
// processes each limited to memMiB of memory divided by the memory scale.
// f.mu is held, so Close cannot slip in between its check and the start.
func (f *Fake) start(name string, args []string, dir string, env []string, memMiB int) (*proc, error) {
	select {
	case <-f.closing: // Close has killed everything; nothing new may start.
		return nil, errors.New("the fake is closing")
	default:
	}
	path, err := lookPath(name, env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	sandboxtest.LimitMemory(cmd, int64(memMiB)<<20/f.memoryScale)
	return sandboxtest.StartProcess(&f.wg, cmd, false)
}

// lookPath finds name as a sandbox would: on its own PATH, not the test's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if dirs, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(dirs) {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// appendData appends p to out as a JSON string. Bytes that are not UTF-8 become
// lone surrogates \udc80-\udcff (Python's surrogateescape), so that a
// client that knows it reads them back exactly; one that does not gets
// U+FFFD.
func appendData(out, p []byte) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for len(p) > 0 {
		// Copy the run of bytes that need no escape in one go.
		i := 0
		for i < len(p) && p[i] >= 0x20 && p[i] < utf8.RuneSelf && p[i] != '"' && p[i] != '\\' && p[i] != 0x7F {
			i++
		}
		out, p = append(out, p[:i]...), p[i:]
		if len(p) == 0 {
			break
		}
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size <= 1:
			out = append(out, '\\', 'u', 'd', 'c', hexDigits[p[0]>>4], hexDigits[p[0]&0xF])
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r == '\n':
			out = append(out, '\\', 'n')
		case r == '\r':
			out = append(out, '\\', 'r')
		case r == '\t':
			out = append(out, '\\', 't')
		case r < 0x20 || r == 0x7F:
			out = append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		case r == '\u2028' || r == '\u2029':
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			out = append(out, p[:size]...)
		}
		p = p[size:]
	}
	return append(out, '"')
}
