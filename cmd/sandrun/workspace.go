package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
)

// workspaceCmd lists the caller's workspaces or removes one: rm submits
// the job that deletes its storage on the profile that keeps it (after
// the workspace's jobs submitted before) and waits for it.
func (c cli) workspaceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Aliases: []string{"workspaces"}, Short: "your durable workspaces"}
	var lsOut, rmOut outputFlag
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list your workspaces",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := lsOut.kind(); err != nil {
				return err
			}
			cl, closeFn, err := c.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			list, err := cl.Workspaces(cmd.Context())
			if err != nil {
				return err
			}
			return c.emit(lsOut, list, func(t *table) {
				t.header("WORKSPACE", "QUEUE", "BACKEND", "LAST USED", "LAST JOB")
				for _, w := range list {
					t.row(w.Workspace, w.Queue, w.Backend, w.LastUsed.Local().Format(time.DateTime), w.LastJob)
				}
			})
		},
	}
	lsOut.register(ls)
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "delete a workspace's storage, after its queued jobs",
		Args:  argsUsage(1, 1, "exactly one workspace name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			if _, err := rmOut.kind(); err != nil {
				return err
			}
			cl, closeFn, err := c.connect(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			spec, err := cl.RemoveWorkspace(ctx, name)
			if err != nil {
				return err
			}
			r, err := cl.Follow(ctx, spec.ID, client.FollowOptions{})
			if err != nil {
				return err
			}
			if r.State != "succeeded" {
				return fmt.Errorf("workspace %s: removal job %s %s: %s", name, spec.ID, r.State, r.Error)
			}
			v := map[string]string{"workspace": name, "removed_by": spec.ID}
			return c.emit(rmOut, v, func(t *table) {
				t.row(fmt.Sprintf("workspace %s removed (job %s)", name, spec.ID))
			})
		},
	}
	rmOut.register(rm)
	cmd.AddCommand(ls, rm)
	return cmd
}
