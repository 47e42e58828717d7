package docker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// ReapOrphans implements backends.OrphanReaper: every container sandrun
// created whose job attempt is no longer live — its worker died (kill -9
// leaves containers running) or the job moved on — is stopped and removed.
func (d *Docker) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true", LabelDeploy+"="+deployment)})
	if err != nil {
		return 0, fmt.Errorf("docker: list containers: %w", err)
	}
	removed := d.reapIdleSessions(ctx)
	for _, c := range list.Items {
		if c.Labels[LabelSession] != "" {
			// Sessions of this process are tracked in memory; those of a
			// worker that died are orphans.
			if d.ownsSession(c.ID) || live("", 0, c.Labels[LabelWorker]) {
				continue
			}
		}
		attempt, _ := strconv.Atoi(c.Labels[LabelAttempt])
		if live(c.Labels[LabelJob], attempt, c.Labels[LabelWorker]) {
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
