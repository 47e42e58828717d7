package daytona

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// reapPage is how many sandboxes one list call returns (the API's maximum
// is 200).
const reapPage = 100

// ReapOrphans implements backends.OrphanReaper: it deletes every sandbox
// of deployment whose job attempt live reports as not live — a worker
// killed with SIGKILL leaves its sandbox running — and returns how many
// it deleted. Sandboxes are found by their labels; those being deleted
// already are left alone.
func (b *Backend) ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error) {
	orphans, err := b.orphans(ctx, deployment, live)
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, sb := range orphans {
		if err := b.api.remove(ctx, sb.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("daytona: reap orphans: %w", err)
	}
	return removed, nil
}

// Orphans lists, without deleting anything, the sandboxes ReapOrphans
// would delete (for `sandrun doctor`), one line each.
func (b *Backend) Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error) {
	orphans, err := b.orphans(ctx, deployment, live)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(orphans))
	for _, sb := range orphans {
		attempt, _ := strconv.Atoi(sb.Labels[LabelAttempt])
		out = append(out, fmt.Sprintf("sandbox %s job %s attempt %d worker %s (%s)",
			sb.ID, sb.Labels[LabelJob], attempt, sb.Labels[LabelWorker], sb.State))
	}
	return out, nil
}

// orphans is the selection ReapOrphans and Orphans share: the sandboxes
// labelled with deployment, not being deleted already, whose job attempt
// live reports as not live. It reads every page of the list before
// returning, so that nothing is deleted under the cursor.
func (b *Backend) orphans(ctx context.Context, deployment string, live func(string, int, string) bool) ([]sandbox, error) {
	filter := map[string]string{LabelManaged: "true", LabelDeployment: deployment}
	var orphans []sandbox
	for cursor := ""; ; {
		page, err := b.api.list(ctx, filter, cursor, reapPage)
		if err != nil {
			return nil, fmt.Errorf("daytona: %w", err)
		}
		for _, sb := range page.Items {
			if sb.State == stateDestroyed || sb.State == stateDestroying || sb.Labels[LabelDeployment] != deployment {
				continue
			}
			attempt, _ := strconv.Atoi(sb.Labels[LabelAttempt])
			if !live(sb.Labels[LabelJob], attempt, sb.Labels[LabelWorker]) {
				orphans = append(orphans, sb)
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" || *page.NextCursor == cursor {
			break
		}
		cursor = *page.NextCursor
	}
	return orphans, nil
}
