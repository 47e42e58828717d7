package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
)

// workspace lists the caller's workspaces or removes one: rm submits the
// job that deletes its storage on the profile that keeps it (after the
// workspace's jobs submitted before) and waits for it.
func (c cli) workspace(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "ls" && args[0] != "rm") {
		return usageErr("workspace ls [--json] | workspace rm NAME")
	}
	sub := args[0]
	var n app.NATSConfig
	fs := c.flags("workspace "+sub, &n)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if sub == "rm" && fs.NArg() != 1 {
		return usageErr("workspace rm: want exactly one workspace name")
	}
	if sub == "ls" && fs.NArg() != 0 {
		return usageErr("workspace ls: takes no arguments")
	}
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	if sub == "ls" {
		list, err := cl.Workspaces(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(c.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(list)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKSPACE\tQUEUE\tBACKEND\tLAST USED\tLAST JOB")
		for _, w := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Workspace, w.Queue, w.Backend, w.LastUsed.Local().Format(time.DateTime), w.LastJob)
		}
		return tw.Flush()
	}
	name := fs.Arg(0)
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
	if *asJSON {
		return json.NewEncoder(c.stdout).Encode(map[string]string{"workspace": name, "removed_by": spec.ID})
	}
	fmt.Fprintf(c.stdout, "workspace %s removed (job %s)\n", name, spec.ID)
	return nil
}
