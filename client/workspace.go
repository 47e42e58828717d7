package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// ErrNoWorkspace is returned for a workspace no job of this owner has
// used (or that was removed).
var ErrNoWorkspace = errors.New("no such workspace")

// Workspaces lists this owner's workspaces, by name, with the profile
// that keeps each and its last use.
func (c *Client) Workspaces(ctx context.Context) ([]WorkspaceInfo, error) {
	prefix := jobs.WorkspaceInfoKey(c.owner, "")
	lister, err := c.store.State.ListKeysFiltered(ctx, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	var out []WorkspaceInfo
	for k := range lister.Keys() {
		info, err := c.workspace(ctx, strings.TrimPrefix(k, prefix))
		if errors.Is(err, ErrNoWorkspace) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b WorkspaceInfo) int { return strings.Compare(a.Workspace, b.Workspace) })
	return out, nil
}

func (c *Client) workspace(ctx context.Context, name string) (WorkspaceInfo, error) {
	var info WorkspaceInfo
	e, err := c.store.State.Get(ctx, jobs.WorkspaceInfoKey(c.owner, name))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return info, fmt.Errorf("workspace %s: %w", name, ErrNoWorkspace)
	}
	if err != nil {
		return info, fmt.Errorf("workspace %s: %w", name, err)
	}
	if err := json.Unmarshal(e.Value(), &info); err != nil {
		return info, fmt.Errorf("workspace %s: %w", name, err)
	}
	return info, nil
}

// RemoveWorkspace submits the job that removes workspace name's storage
// on the profile that keeps it, after the workspace's jobs submitted
// before it; follow it with Follow or WaitResult.
func (c *Client) RemoveWorkspace(ctx context.Context, name string) (jobs.Spec, error) {
	info, err := c.workspace(ctx, name)
	if err != nil {
		return jobs.Spec{}, err
	}
	return c.Submit(ctx, jobs.Spec{Command: ":", Queue: info.Queue, Backend: info.Backend, Workspace: name, RemoveWorkspace: true, MaxAttempts: 3})
}
