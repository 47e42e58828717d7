package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// takeWorkspace returns the run slot of spec's workspace: the workspace's
// lease, held while the job runs, so that its jobs run one at a time —
// and only once every job placed before it in the workspace's order (the
// keys its submitter wrote, jobs.WorkspaceQueueKey) has ended. (nil,
// false) for a job without a workspace; (nil, true) when it must wait.
func (w *Worker) takeWorkspace(ctx context.Context, spec jobs.Spec, owner string) (*batchSlot, bool, error) {
	if spec.Workspace == "" {
		return nil, false, nil
	}
	ahead, err := w.workspaceAhead(ctx, spec, owner)
	if err != nil || ahead {
		return nil, true, err
	}
	holder, _ := json.Marshal(map[string]string{"worker": w.cfg.Name, "job": spec.ID})
	l, err := lease.Acquire(ctx, w.store.JS, w.store.State, jobs.WorkspaceLockKey(owner, spec.Workspace), w.cfg.LeaseTTL, holder)
	if errors.Is(err, lease.ErrHeld) {
		return nil, true, nil
	}
	if err != nil {
		return nil, true, err
	}
	return &batchSlot{lease: l, keeper: lease.Keep(l, lease.KeeperConfig{})}, true, nil
}

// workspaceAhead reports whether a job placed before spec in its
// workspace has not ended. Places of jobs that have ended are removed on
// the way (their worker removes them when it commits; one that died in
// between, or a job canceled in its queue, leaves them).
func (w *Worker) workspaceAhead(ctx context.Context, spec jobs.Spec, owner string) (bool, error) {
	prefix := jobs.WorkspaceQueuePrefix(owner, spec.Workspace)
	lister, err := w.store.State.ListKeysFiltered(ctx, prefix+"*")
	if err != nil {
		return false, fmt.Errorf("workspace %s: list its queue: %w", spec.Workspace, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		at, id, ok := parsePlace(strings.TrimPrefix(k, prefix))
		if !ok {
			continue
		}
		if id == spec.ID {
			return false, nil // its own place: everything before it has ended
		}
		run, _, err := w.store.GetRun(ctx, id)
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			// Queued (no record until its first claim), or ended and
			// expired long ago: a place older than the queue's shortest
			// retention no longer holds the workspace up.
			if w.now().Sub(at) < w.store.Retention.For(spec.Queue, jobs.StateSucceeded) {
				return true, nil
			}
		case err != nil:
			return false, fmt.Errorf("workspace %s: job %s ahead: %w", spec.Workspace, id, err)
		case !run.State.Terminal():
			return true, nil
		}
		_ = w.store.State.Delete(ctx, k)
	}
	return false, nil
}

// parsePlace reads NANOS-ID, the end of a workspace queue key.
func parsePlace(s string) (time.Time, string, bool) {
	nanos, id, ok := strings.Cut(s, "-")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.Unix(0, n), id, true
}

// leaveWorkspace removes an ended job's place in its workspace's order,
// so that the next job may run.
func (w *Worker) leaveWorkspace(ctx context.Context, spec jobs.Spec, owner string) {
	if spec.Workspace == "" {
		return
	}
	err := w.store.State.Delete(ctx, jobs.WorkspaceQueueKey(owner, spec.Workspace, spec.SubmittedAt, spec.ID))
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		w.log.Warn("workspace: remove the job's place", "job", spec.ID, "workspace", spec.Workspace, "err", err)
	}
}

// recordWorkspace notes that a job of the workspace starts now, for
// `sandrun workspace ls`. A failed write costs only the listing.
func (w *Worker) recordWorkspace(ctx context.Context, j *job) {
	if j.spec.Workspace == "" {
		return
	}
	info, _ := json.Marshal(jobs.WorkspaceInfo{Workspace: j.spec.Workspace, Queue: j.spec.Queue, Backend: j.spec.Backend, LastJob: j.spec.ID, LastUsed: w.now().UTC()})
	if _, err := w.store.State.Put(ctx, jobs.WorkspaceInfoKey(j.run.OwnerString(), j.spec.Workspace), info); err != nil {
		j.log.Warn("workspace: record its use", "err", err)
	}
}

// removeWorkspace runs a `sandrun workspace rm` job: the backend deletes
// the workspace's storage, and the listing forgets it.
func (w *Worker) removeWorkspace(ctx context.Context, j *job, be backends.Backend) {
	rm, ok := be.(backends.WorkspaceRemover)
	if !ok {
		j.failed(ctx, fmt.Sprintf("workspace: profile %s (%s) cannot remove workspaces", j.spec.Backend, be.Kind()), false)
		return
	}
	if err := rm.RemoveWorkspace(ctx, w.store.Deployment, workspaceStorage(j.run, j.spec.Workspace)); err != nil {
		j.failed(ctx, "workspace: remove: "+err.Error(), true)
		return
	}
	if err := w.store.State.Delete(ctx, jobs.WorkspaceInfoKey(j.run.OwnerString(), j.spec.Workspace)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		j.log.Warn("workspace: forget it", "err", err)
	}
	r := j.result(jobs.StateSucceeded, "")
	r.ExitCode = 0
	j.finish(ctx, r)
}

// expireWorkspaces, on the reaper, removes the workspaces no job has
// used for WorkspaceIdle: at each pass (every ReaperScan) it submits,
// for each, its owner's removal job. O(workspaces) per pass, never
// O(jobs).
func (w *Worker) expireWorkspaces(ctx context.Context) {
	t := time.NewTicker(w.cfg.ReaperScan)
	defer t.Stop()
	for {
		w.expireIdle(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expireIdle is one pass of expireWorkspaces.
func (w *Worker) expireIdle(ctx context.Context) {
	lister, err := w.store.State.ListKeysFiltered(ctx, jobs.WorkspaceInfoPrefix+">")
	if err != nil {
		w.log.Warn("workspaces: list", "err", err)
		return
	}
	now := w.now().UTC()
	for k := range lister.Keys() {
		rest := strings.TrimPrefix(k, jobs.WorkspaceInfoPrefix)
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			continue
		}
		owner, name := rest[:i], rest[i+1:]
		if _, ok := jobs.ParseOwner(owner); !ok {
			continue
		}
		e, err := w.store.State.Get(ctx, k)
		if err != nil {
			continue
		}
		var info jobs.WorkspaceInfo
		if json.Unmarshal(e.Value(), &info) != nil || now.Sub(info.LastUsed) < w.cfg.WorkspaceIdle {
			continue
		}
		// Claimed by this pass before anything is submitted: the record's
		// last use moves to now, so no other pass submits a second removal.
		idle := now.Sub(info.LastUsed)
		info.LastUsed, info.LastJob = now, jobs.NewID(now)
		data, _ := json.Marshal(info)
		if _, err := w.store.State.Update(ctx, k, data, e.Revision()); err != nil {
			continue
		}
		spec := jobs.Spec{ID: info.LastJob, Command: ":", Queue: info.Queue, Backend: info.Backend, Workspace: name,
			RemoveWorkspace: true, MaxAttempts: 3, SubmittedAt: now, Labels: map[string]string{"reason": "workspace-idle"}}.WithDefaults()
		if err := w.store.SubmitPipelined(ctx, spec, owner, spec.ID); err != nil {
			w.log.Warn("workspaces: submit the removal of an idle one", "workspace", name, "owner", owner, "err", err)
			continue
		}
		if _, err := w.store.State.Put(ctx, jobs.WorkspaceQueueKey(owner, name, now, spec.ID), []byte(spec.ID)); err != nil {
			w.log.Warn("workspaces: place the removal", "workspace", name, "err", err)
		}
		w.log.Info("workspace idle: removal submitted", "workspace", name, "owner", owner, "job", spec.ID, "idle", idle)
	}
}
