package modal

import (
	"context"
	"errors"
	"fmt"
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
	found, err := b.orphans(ctx, deployment, live)
	errs := []error{err}
	for _, o := range found {
		if _, err := o.sb.Terminate(ctx, nil); err != nil {
			errs = append(errs, classify("reap sandbox "+o.sb.SandboxID, err))
		} else {
			reaped++
			b.cfg.Logger.Info("modal: orphan sandbox terminated", "sandbox", o.sb.SandboxID)
		}
		_ = o.sb.Detach()
	}
	return reaped, errors.Join(errs...)
}

// Orphans lists, without terminating anything, the sandboxes ReapOrphans
// would terminate (for `sandrun doctor`), one line each. Unlike
// ReapOrphans it leaves this backend's idle sessions alone. With an
// error, the list holds the orphans found before it.
func (b *Backend) Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error) {
	found, err := b.orphans(ctx, deployment, live)
	out := make([]string, 0, len(found))
	for _, o := range found {
		out = append(out, o.String())
		_ = o.sb.Detach()
	}
	return out, err
}

// orphanSandbox is a sandbox ReapOrphans would terminate, and its tags.
type orphanSandbox struct {
	sb   *modal.Sandbox
	tags map[string]string
}

// String describes o in one line.
func (o orphanSandbox) String() string {
	s := fmt.Sprintf("sandbox %s job %s attempt %s worker %s", o.sb.SandboxID, o.tags[TagJob], o.tags[TagAttempt], o.tags[TagWorker])
	if o.tags[TagSession] != "" {
		used, _ := strconv.ParseInt(o.tags[TagUsed], 10, 64)
		s += " (session sandbox, last used " + time.Unix(used, 0).UTC().Format(time.RFC3339) + ")"
	}
	return s
}

// orphans is the selection ReapOrphans and Orphans share: it lists the
// app's sandboxes tagged with deployment and returns the orphans among
// them (see orphan), still attached: the caller detaches them. It
// detaches the others itself. A sandbox whose tags cannot be read is
// skipped, its error joined to the one returned.
func (b *Backend) orphans(ctx context.Context, deployment string, live func(string, int, string) bool) ([]orphanSandbox, error) {
	c, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	filter := map[string]string{TagManaged: "true"}
	if deployment != "" {
		filter[TagDeployment] = deployment
	}
	list, err := c.sdk.Sandboxes.List(ctx, &modal.SandboxListParams{AppID: c.app.AppID, Tags: filter})
	if err != nil {
		return nil, classify("list sandboxes", err)
	}
	var (
		found []orphanSandbox
		errs  []error
	)
	for sb, err := range list {
		if err != nil {
			errs = append(errs, classify("list sandboxes", err))
			break
		}
		t, orphan, err := b.orphan(ctx, sb, deployment, live)
		if err != nil {
			errs = append(errs, classify("read the tags of sandbox "+sb.SandboxID, err))
		}
		if orphan {
			found = append(found, orphanSandbox{sb: sb, tags: t})
			continue
		}
		_ = sb.Detach()
	}
	return found, errors.Join(errs...)
}

// orphan reports whether sb is an orphan of deployment (see ReapOrphans),
// with its tags when it read them.
func (b *Backend) orphan(ctx context.Context, sb *modal.Sandbox, deployment string, live func(string, int, string) bool) (map[string]string, bool, error) {
	if b.owns(sb.SandboxID) {
		return nil, false, nil
	}
	t, err := sb.GetTags(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	if t[TagManaged] != "true" || t[TagDeployment] != deployment {
		return t, false, nil
	}
	attempt, _ := strconv.Atoi(t[TagAttempt])
	if live(t[TagJob], attempt, t[TagWorker]) {
		return t, false, nil
	}
	if t[TagSession] != "" {
		used, _ := strconv.ParseInt(t[TagUsed], 10, 64)
		if time.Since(time.Unix(used, 0)) < b.cfg.SessionIdle {
			return t, false, nil
		}
	}
	return t, true, nil
}
