package docker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// initWatch is how long after its start a container is watched for its
// init to be ready before a SIGTERM, and how often.
const (
	initWatch     = 10 * time.Second
	initWatchPoll = 5 * time.Millisecond
)

// initReady waits, for at most limit, until container id's PID 1 (the
// engine's init: every container is made with one) has started the job's
// command. An init sets up its signal handling before it forks its child;
// a SIGTERM that reaches it before then is lost, since a PID 1 without a
// handler ignores it. On a loaded machine that window has lasted longer
// than a second after ContainerStart returned.
//
// seen is false when the worker cannot see the container's processes (an
// engine on another host, or the worker in a PID namespace of its own: the
// process found under the engine's PID must be in the container's cgroup);
// the caller then falls back to sending SIGTERM again after initSettle.
func (d *Docker) initReady(ctx context.Context, id string, limit time.Duration) (seen bool) {
	info, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil || info.Container.State == nil || info.Container.State.Pid <= 0 {
		return false
	}
	root := d.procRoot
	if root == "" {
		root = "/proc"
	}
	pid := strconv.Itoa(info.Container.State.Pid)
	cg, err := os.ReadFile(filepath.Join(root, pid, "cgroup"))
	if err != nil || !strings.Contains(string(cg), id) {
		return false
	}
	children := filepath.Join(root, pid, "task", pid, "children")
	deadline := time.Now().Add(limit)
	for {
		b, err := os.ReadFile(children)
		if err != nil {
			// No children file (a kernel without CONFIG_PROC_CHILDREN)
			// tells nothing; one that went away, with its process, means
			// there is nothing left to signal.
			_, gone := os.Stat(filepath.Join(root, pid))
			return gone != nil
		}
		if len(strings.TrimSpace(string(b))) > 0 || time.Now().After(deadline) {
			return true
		}
		select {
		case <-ctx.Done():
			return true
		case <-time.After(initWatchPoll):
		}
	}
}
