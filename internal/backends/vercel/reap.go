package vercel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// reapPage is how many sandboxes one list call returns (the API's
// maximum is 50).
const reapPage = 50

// ReapOrphans implements backends.OrphanReaper: it stops and deletes every
// sandbox of the project tagged with deployment whose job attempt live
// reports as not live — a worker killed with SIGKILL leaves its sandbox
// running until its timeout — and returns how many it removed.
func (b *Backend) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	orphans, err := b.orphans(ctx, deployment, live)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, sb := range orphans {
		if sb.Status != statusStopped && sb.Status != statusFailed && sb.Status != statusAborted && sb.CurrentSessionID != "" {
			// Deleting the sandbox ends it anyway: a failed stop is only noted.
			if err := b.api.stopSession(ctx, sb.CurrentSessionID); err != nil {
				errs = append(errs, err)
			}
		}
		if err := b.api.remove(ctx, sb.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("vercel: reap orphans: %w", err)
	}
	return removed, nil
}

// Orphans lists, without stopping or deleting anything, the sandboxes
// ReapOrphans would remove (for `sandrun doctor`), one line each.
func (b *Backend) Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error) {
	orphans, err := b.orphans(ctx, deployment, live)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(orphans))
	for _, sb := range orphans {
		attempt, _ := strconv.Atoi(sb.Tags[TagAttempt])
		line := fmt.Sprintf("sandbox %s job %s attempt %d worker %s", sb.Name, sb.Tags[TagJob], attempt, sb.Tags[TagWorker])
		if sb.Status != "" {
			line += " (" + sb.Status + ")"
		}
		out = append(out, line)
	}
	return out, nil
}

// orphans is the selection ReapOrphans and Orphans share: the project's
// sandboxes tagged as sandrun's, of deployment, whose job attempt live
// reports as not live. It reads every page of the list before returning,
// so that nothing is deleted under the cursor.
func (b *Backend) orphans(ctx context.Context, deployment string, live func(string, int, string) bool) ([]namedSandbox, error) {
	var orphans []namedSandbox
	for cursor := ""; ; {
		page, err := b.api.list(ctx, TagDeployment, deployment, cursor, reapPage)
		if err != nil {
			return nil, fmt.Errorf("vercel: %w", err)
		}
		for _, sb := range page.Sandboxes {
			if sb.Tags[TagManaged] != "true" || sb.Tags[TagDeployment] != deployment {
				continue
			}
			attempt, _ := strconv.Atoi(sb.Tags[TagAttempt])
			if !live(sb.Tags[TagJob], attempt, sb.Tags[TagWorker]) {
				orphans = append(orphans, sb)
			}
		}
		next := page.Pagination.Next
		if next == nil || *next == "" || *next == cursor {
			break
		}
		cursor = *next
	}
	return orphans, nil
}
