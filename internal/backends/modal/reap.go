package modal

import (
	"context"
	"errors"
	"strconv"
	"time"

	modal "github.com/modal-labs/modal-client/go"
)

// ReapOrphans implements backends.OrphanReaper. It terminates this
// backend's sessions idle for SessionIdle, then lists the app's sandboxes
// tagged with deployment and terminates those no Run of this backend
// uses and whose job attempt live reports as not live: a job sandbox's
// own attempt; for a session sandbox, the attempt that last used it, and
// only once SessionIdle has passed since (its owner, if alive, would have
// ended it by then; if not, its next job starts a new one).
func (b *Backend) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	reaped := b.reapIdleSessions(ctx)
	c, err := b.connect(ctx)
	if err != nil {
		return reaped, err
	}
	filter := map[string]string{TagManaged: "true"}
	if deployment != "" {
		filter[TagDeployment] = deployment
	}
	list, err := c.sdk.Sandboxes.List(ctx, &modal.SandboxListParams{AppID: c.app.AppID, Tags: filter})
	if err != nil {
		return reaped, classify("list sandboxes", err)
	}
	var errs []error
	for sb, err := range list {
		if err != nil {
			errs = append(errs, classify("list sandboxes", err))
			break
		}
		orphan, err := b.orphan(ctx, sb, deployment, live)
		if err == nil && orphan {
			if _, err = sb.Terminate(ctx, nil); err == nil {
				reaped++
				b.cfg.Logger.Info("modal: orphan sandbox terminated", "sandbox", sb.SandboxID)
			}
		}
		if err != nil {
			errs = append(errs, classify("reap sandbox "+sb.SandboxID, err))
		}
		_ = sb.Detach()
	}
	return reaped, errors.Join(errs...)
}

// orphan reports whether sb is an orphan of deployment (see ReapOrphans).
func (b *Backend) orphan(ctx context.Context, sb *modal.Sandbox, deployment string, live func(string, int, string) bool) (bool, error) {
	if b.owns(sb.SandboxID) {
		return false, nil
	}
	t, err := sb.GetTags(ctx, nil)
	if err != nil {
		return false, err
	}
	if t[TagManaged] != "true" || t[TagDeployment] != deployment {
		return false, nil
	}
	attempt, _ := strconv.Atoi(t[TagAttempt])
	if live(t[TagJob], attempt, t[TagWorker]) {
		return false, nil
	}
	if t[TagSession] != "" {
		used, _ := strconv.ParseInt(t[TagUsed], 10, 64)
		if time.Since(time.Unix(used, 0)) < b.cfg.SessionIdle {
			return false, nil
		}
	}
	return true, nil
}
