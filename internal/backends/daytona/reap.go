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
	filter := map[string]string{LabelManaged: "true", LabelDeployment: deployment}
	var orphans []string
	for cursor := ""; ; {
		page, err := b.api.list(ctx, filter, cursor, reapPage)
		if err != nil {
			return 0, fmt.Errorf("daytona: %w", err)
		}
		for _, sb := range page.Items {
			if sb.State == stateDestroyed || sb.State == stateDestroying || sb.Labels[LabelDeployment] != deployment {
				continue
			}
			attempt, _ := strconv.Atoi(sb.Labels[LabelAttempt])
			if !live(sb.Labels[LabelJob], attempt, sb.Labels[LabelWorker]) {
				orphans = append(orphans, sb.ID)
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" || *page.NextCursor == cursor {
			break
		}
		cursor = *page.NextCursor
	}
	removed := 0
	var errs []error
	for _, id := range orphans {
		if err := b.api.remove(ctx, id); err != nil {
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
