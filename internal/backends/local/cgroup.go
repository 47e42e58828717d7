package local

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/cgroup"
)

// Config.Cgroup values.
const (
	// CgroupAuto runs each attempt in a cgroup of its own where the
	// worker can make one, in its process group alone elsewhere.
	CgroupAuto = "auto"
	// CgroupOff contains attempts by their process group alone.
	CgroupOff = "off"
	// CgroupRequired refuses to start (Validate fails) where the worker
	// cannot make cgroups.
	CgroupRequired = "required"
)

// cgroupRemoveWithin bounds how long Run waits, after killing a job's
// cgroup, for its processes to go before it removes the group. A process
// stuck in the kernel (an NFS read, say) can outlast it; its group is
// then left behind, and logged.
const cgroupRemoveWithin = 2 * time.Second

// staleAfter is how old an empty attempt's cgroup must be for a starting
// worker to remove it. One that a live worker has just made stays empty
// for the microseconds until its process starts in it.
const staleAfter = time.Minute

// cgroups is a Local's cgroup v2 set-up. What the host allows is probed
// once, on first use (Validate, or else the first Run), and logged then.
type cgroups struct {
	mode   string
	parent string // Config.CgroupParent; empty: <the worker's cgroup>/sandrun.
	shell  string // What the probe starts in a group, as Run would.
	log    *slog.Logger

	once sync.Once
	dir  string // Where job groups are made; empty: process groups only.
	err  error  // Why dir is empty, unless mode is off.
}

// ready returns the directory job groups are made in, or "" and the
// reason when attempts run in their process group alone.
func (c *cgroups) ready() (string, error) {
	c.once.Do(c.probe)
	return c.dir, c.err
}

func (c *cgroups) probe() {
	if c.mode == CgroupOff {
		return
	}
	dir, err := c.prepare()
	if err != nil {
		field := "cgroup"
		if c.parent != "" {
			field = "cgroup_parent"
		}
		c.err = fmt.Errorf("local: %s: %w", field, err)
		if c.mode == CgroupAuto {
			c.log.Warn("local: no cgroup v2 for jobs: each runs in its own process group only, and a process that leaves it (setsid, setpgid) outlives the job's timeout or cancel",
				"err", err)
		}
		return
	}
	c.dir = dir
	c.log.Info("local: each job attempt runs in a cgroup v2 of its own", "cgroup_parent", dir)
	// A worker killed with kill -9 leaves its attempts' groups behind.
	// Workers may share the parent: only empty groups old enough not to
	// be another's, about to start a process, are removed.
	for _, prefix := range []string{"job-", "probe-"} {
		n, err := cgroup.RemoveStale(dir, prefix, staleAfter)
		if n > 0 {
			c.log.Info("local: removed empty cgroups that no worker had removed", "cgroup_parent", dir, "removed", n)
		}
		if err != nil {
			c.log.Warn("local: cannot remove stale cgroups", "cgroup_parent", dir, "err", err)
		}
	}
}

// prepare makes the parent of job groups and checks, by starting a
// process in a group of its own, that the worker can put processes there
// (clone3 may be missing, or refused by a seccomp filter; the cgroup
// tree may be read-only or not delegated to the worker).
func (c *cgroups) prepare() (string, error) {
	dir := c.parent
	if dir == "" {
		self, err := cgroup.Self()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(self, "sandrun")
	}
	if err := cgroup.Prepare(dir); err != nil {
		return "", err
	}
	g, err := cgroup.Create(dir, "probe-"+randomSuffix())
	if err != nil {
		return "", err
	}
	cmd := exec.Command(c.shell, "-c", ":")
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	runErr := cmd.Run()
	if runErr != nil {
		runErr = fmt.Errorf("starting a process in %s: %w", g.Path(), runErr)
	}
	_ = g.Kill()
	if err := g.Remove(cgroupRemoveWithin); err != nil && runErr == nil {
		runErr = err
	}
	return dir, runErr
}

// create makes the cgroup of one attempt, or returns nil when it runs in
// its process group alone. With mode required, failing to make one fails
// the attempt (retryably); with auto, it is logged and the attempt runs
// without.
func (c *cgroups) create(spec backends.Spec) (*cgroup.Group, error) {
	dir, err := c.ready()
	if dir == "" {
		if c.mode == CgroupRequired {
			return nil, fmt.Errorf("%w: %w", err, backends.ErrUnavailable)
		}
		return nil, nil
	}
	g, err := cgroup.Create(dir, groupName(spec.JobID, spec.Attempt))
	if err != nil {
		if c.mode == CgroupRequired {
			return nil, fmt.Errorf("local: %w", err)
		}
		c.log.Warn("local: cannot make the attempt's cgroup: it runs in its process group only",
			"job", spec.JobID, "attempt", spec.Attempt, "err", err)
		return nil, nil
	}
	return g, nil
}

// remove removes an attempt's group, which its caller has killed. One
// that will not empty is left behind, and logged.
func (c *cgroups) remove(g *cgroup.Group, spec backends.Spec) {
	if g == nil {
		return
	}
	if err := g.Remove(cgroupRemoveWithin); err != nil {
		c.log.Warn("local: the attempt's cgroup is left behind", "job", spec.JobID, "attempt", spec.Attempt,
			"cgroup", g.Path(), "err", err)
	}
}

// maxIDInName bounds the job ID's share of a group's name.
const maxIDInName = 64

// groupName names an attempt's cgroup: job-ID-ATTEMPT-RANDOM. Job IDs are
// validated upstream, but not for this: every byte outside [A-Za-z0-9_-]
// becomes '_', and the ID is cut to maxIDInName bytes, so the name is
// always one harmless path element. The random suffix keeps two workers
// (or a retried start) from ever sharing a group.
func groupName(jobID string, attempt int) string {
	id := []byte(jobID[:min(len(jobID), maxIDInName)])
	for i, b := range id {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '_', b == '-':
		default:
			id[i] = '_'
		}
	}
	return strings.Join([]string{"job", string(id), strconv.Itoa(attempt), randomSuffix()}, "-")
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // Never fails on Linux (crypto/rand panics rather).
	return hex.EncodeToString(b)
}
