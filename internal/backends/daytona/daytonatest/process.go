package daytonatest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// Log markers: the daemon prefixes each chunk of a session command's log
// with the stream it came from.
var (
	stdoutMarker = []byte{0x01, 0x01, 0x01}
	stderrMarker = []byte{0x02, 0x02, 0x02}
)

// proc is one command the fake runs, as the daemon would: `sh -c TEXT`
// in a process group of its own, with exactly the environment given, an
// empty standard input and the sandbox's memory limit.
type proc = sandboxtest.Process

// start starts text in sb, in its directory dir, with env. Its output is
// captured marked, from a pipe per stream, or combined, from one pipe for
// both (which keeps their order). A sandbox with volumes runs it where it
// sees them (see mount.go). f.mu is held, so Close cannot slip in between
// its check and the start.
func (f *Fake) start(sb *sandbox, text, dir string, env []string, marked bool) (*proc, error) {
	select {
	case <-f.closing: // Close has killed everything; nothing new may start.
		return nil, errors.New("the fake is closing")
	default:
	}
	cmd := exec.Command("/bin/sh", "-c", text)
	if len(sb.mounts) > 0 {
		root := filepath.Join(f.root, "mnt")
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
		var err error
		if cmd, err = getMounter().command(root, sb.mounts, text, dir); err != nil {
			return nil, err
		}
	}
	// Where dir is on the host: a missing one fails the start.
	cmd.Dir, cmd.Env = sb.hostPath(dir), env
	sandboxtest.LimitMemory(cmd, f.memoryLimit(sb))
	return sandboxtest.StartProcess(&f.wg, cmd, !marked)
}

// markedLog returns chunks as the daemon's log of a session command
// has them: each prefixed with the marker of its stream.
func markedLog(chunks []sandboxtest.Chunk) []byte {
	var data []byte
	for _, c := range chunks {
		data = append(data, [][]byte{stdoutMarker, stderrMarker}[c.Stream]...)
		data = append(data, c.Data...)
	}
	return data
}
