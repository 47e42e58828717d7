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

// plan sorts the run directories for the reaper: running orphans of
// deployment to stop (under on_orphan: kill; with adopt they are left for
// the job's next attempt), and directories to remove — ended ones older
// than KeepFailed, and dead ones whose attempt is not live.
func (b *Backend) plan(runs []runInfo, deployment string, live func(jobID string, attempt int, worker string) bool) (stop []runInfo, remove []string) {
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
			stop = append(stop, run)
		}
	}
	return stop, remove
}

// ReapOrphans implements backends.OrphanReaper for the remote host (see
// plan): orphans are stopped (TERM, then KILL) and their directories
// removed with the stale ones.
func (b *Backend) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	c, err := b.pool.get(ctx)
	if err != nil {
		return 0, err
	}
	runs, err := b.listRuns(ctx, &c, "")
	if err != nil {
		return 0, err
	}
	stop, remove := b.plan(runs, deployment, live)
	reaped := 0
	for _, run := range stop {
		dir := path.Join(b.cfg.RunRoot, run.name)
		if err := b.stopDir(ctx, &c, dir, backends.DefaultKillGrace); err != nil {
			return reaped, fmt.Errorf("kill orphan %s: %w", dir, err)
		}
		remove = append(remove, dir)
		reaped++
	}
	if len(remove) > 0 {
		if _, err := b.exec(ctx, c, removeScript, remove...); err != nil {
			return reaped, err
		}
	}
	return reaped, nil
}

// Orphans lists, without touching anything, the running orphans
// ReapOrphans would stop (for `sandrun doctor`).
func (b *Backend) Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error) {
	c, err := b.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	runs, err := b.listRuns(ctx, &c, "")
	if err != nil {
		return nil, err
	}
	stop, _ := b.plan(runs, deployment, live)
	out := make([]string, 0, len(stop))
	for _, run := range stop {
		out = append(out, fmt.Sprintf("%s job %s attempt %d worker %s", path.Join(b.cfg.RunRoot, run.name), run.meta.job, run.meta.attempt, run.meta.worker))
	}
	return out, nil
}

// Describe reports the connection and the run directories (for `sandrun
// doctor`).
func (b *Backend) Describe(ctx context.Context) (string, error) {
	c, err := b.pool.get(ctx)
	if err != nil {
		return "", fmt.Errorf("host: %w", err)
	}
	runs, err := b.listRuns(ctx, &c, "")
	if err != nil {
		return "", err
	}
	count := map[string]int{}
	for _, r := range runs {
		count[r.state]++
	}
	via := ""
	for _, h := range b.target.hops {
		via += " via " + h.user + "@" + h.addr()
	}
	return fmt.Sprintf("%s@%s%s (%s), run root %s: %d running, %d ended, %d dead; on_orphan %s, host keys %s",
		b.target.host.user, b.target.host.addr(), via, c.client.ServerVersion(), b.cfg.RunRoot,
		count[stateRunning], count[stateEnded], count[stateDead], b.cfg.OnOrphan, b.cfg.HostKeyPolicy), nil
}
