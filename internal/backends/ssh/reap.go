package ssh

import (
	"bufio"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Run directory states, as listScript reports them.
const (
	stateEnded   = "ended"
	stateRunning = "running"
	stateDead    = "dead"
)

// runInfo is one run directory on the remote host.
type runInfo struct {
	name  string
	state string
	age   time.Duration // since the exit status was written (ended runs)
	meta  runMeta
}

// listRuns lists the run directories whose names start with prefix.
func (b *Backend) listRuns(ctx context.Context, cp **conn, prefix string) ([]runInfo, error) {
	var out string
	args := []string{b.cfg.RunRoot}
	if prefix != "" {
		args = append(args, prefix)
	}
	err := b.withConn(ctx, cp, func(c *conn) error {
		var err error
		out, err = b.exec(ctx, c, listScript, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list run directories: %w", err)
	}
	return parseRuns(out), nil
}

// parseRuns reads listScript's output.
func parseRuns(out string) []runInfo {
	var runs []runInfo
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "@run" {
			age, _ := strconv.Atoi(f[3])
			runs = append(runs, runInfo{name: f[1], state: f[2], age: time.Duration(age) * time.Second})
			continue
		}
		if len(runs) == 0 {
			continue
		}
		m := &runs[len(runs)-1].meta
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "job":
			m.job = v
		case "attempt":
			m.attempt, _ = strconv.Atoi(v)
		case "worker":
			m.worker = v
		case "deployment":
			m.deployment = v
		}
	}
	return runs
}

// ReapOrphans implements backends.OrphanReaper for the remote host: a run
// of this deployment still running while its attempt is not live is
// killed and removed (under on_orphan: kill; with adopt it is left for the
// job's next attempt to take over); ended runs older than KeepFailed, and
// dead ones whose attempt is not live, are removed.
func (b *Backend) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	c, err := b.pool.get(ctx)
	if err != nil {
		return 0, err
	}
	runs, err := b.listRuns(ctx, &c, "")
	if err != nil {
		return 0, err
	}
	var (
		remove []string
		reaped int
	)
	for _, run := range runs {
		dir := path.Join(b.cfg.RunRoot, run.name)
		switch {
		case run.state == stateEnded:
			if run.age > b.cfg.KeepFailed {
				remove = append(remove, dir)
			}
		case run.meta.deployment != deployment || run.meta.job == "":
		case live(run.meta.job, run.meta.attempt, run.meta.worker):
		case run.state == stateDead:
			remove = append(remove, dir)
		case b.cfg.OnOrphan == orphanKill:
			if err := b.stopDir(ctx, &c, dir, backends.DefaultKillGrace); err != nil {
				return reaped, fmt.Errorf("kill orphan %s: %w", dir, err)
			}
			remove = append(remove, dir)
			reaped++
		}
	}
	if len(remove) > 0 {
		if _, err := b.exec(ctx, c, removeScript, remove...); err != nil {
			return reaped, err
		}
	}
	return reaped, nil
}
