package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// Describe reports the engine and the API version in use (for `sandrun
// doctor`).
func (d *Docker) Describe(ctx context.Context) (string, error) {
	v, err := d.api.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("host: engine unreachable: %w", err)
	}
	p, err := d.api.Ping(ctx, client.PingOptions{})
	if err != nil {
		return "", fmt.Errorf("host: engine unreachable: %w", err)
	}
	return fmt.Sprintf("engine %s (max API %s), negotiated API %s, image %s, pull %s", v.Version, v.APIVersion, p.APIVersion, d.cfg.Image, d.cfg.Pull), nil
}

// Orphans lists, without removing anything, the containers ReapOrphans
// would remove.
func (d *Docker) Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error) {
	list, err := d.api.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true", LabelDeploy+"="+deployment)})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", err)
	}
	var out []string
	for _, c := range list.Items {
		job, attempt, worker, idle := attemptOf(c)
		switch {
		case c.Labels[LabelSession] != "":
		case idle:
			if !d.keepIdle(c, live) {
				out = append(out, fmt.Sprintf("%.12s pooled, idle, worker %s (%s)", c.ID, worker, c.State))
			}
		case !live(job, attempt, worker):
			out = append(out, fmt.Sprintf("%.12s job %s attempt %d worker %s (%s)", c.ID, job, attempt, worker, c.State))
		}
	}
	return out, nil
}

var _ backends.Backend = (*Docker)(nil)
