package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// ReapOrphans implements backends.OrphanReaper: every container sandrun
// created whose job attempt is no longer live — its worker died (kill -9
// leaves containers running) or the job moved on — is stopped and removed.
// A pooled container's attempt is read from the name its claim gave it;
// an idle one of this profile goes with its worker, and this backend's
// own go when their pool was unused for SessionIdle.
func (d *Docker) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true", LabelDeploy+"="+deployment)})
	if err != nil {
		return 0, fmt.Errorf("docker: list containers: %w", err)
	}
	removed := d.reapIdleSessions(ctx)
	for _, id := range d.pools.expire(d.cfg.SessionIdle) {
		d.remove(ctx, id) // unused, not orphaned: not counted
	}
	for _, c := range list.Items {
		job, attempt, worker, idle := attemptOf(c)
		switch {
		case c.Labels[LabelSession] != "":
			// Sessions of this process are tracked in memory; those of a
			// worker that died are orphans.
			if d.ownsSession(c.ID) || live("", 0, worker) {
				continue
			}
		case idle && d.keepIdle(c, live):
			continue
		}
		if live(job, attempt, worker) {
			continue
		}
		if _, err := d.api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
			return removed, fmt.Errorf("docker: remove orphan %s: %w", c.ID, err)
		}
		removed++
	}
	return removed, nil
}

var _ backends.OrphanReaper = (*Docker)(nil)

// keepIdle reports whether the idle pooled container c stays: it is this
// backend's, another profile's (whose own backend decides), or its
// worker is live. A claimed one is judged by its job's attempt.
func (d *Docker) keepIdle(c container.Summary, live func(jobID string, attempt int, worker string) bool) bool {
	return c.Labels[LabelProfile] != d.cfg.Profile || d.pools.owns(c.ID) || live("", 0, c.Labels[LabelWorker])
}

func (d *Docker) ownsSession(id string) bool {
	d.sessMu.Lock()
	defer d.sessMu.Unlock()
	for _, s := range d.sessions {
		if s.id == id {
			return true
		}
	}
	return false
}
