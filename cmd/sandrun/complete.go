package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// completionTimeout bounds the server round trips of a completion: a
// shell waiting on a Tab must not hang on an unreachable server.
const completionTimeout = 2 * time.Second

// completeJobIDs offers the IDs of the 100 most recently changed jobs,
// each with its state and command.
func (c cli) completeJobIDs(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	c.withCompletionClient(cmd, func(ctx context.Context, cl *client.Client) error {
		page, err := cl.ListPage(ctx, client.ListFilter{Limit: 100})
		if err != nil {
			return err
		}
		for _, st := range page.Jobs {
			if strings.HasPrefix(st.Run.Spec.ID, prefix) {
				out = append(out, fmt.Sprintf("%s\t%s %s", st.Run.Spec.ID, st.State(), cut(st.Run.Spec.Command, 40)))
			}
		}
		return nil
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSchedules offers the schedules' names.
func (c cli) completeSchedules(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	c.withCompletionClient(cmd, func(ctx context.Context, cl *client.Client) error {
		list, err := scheduler.NewCatalog(cl.Store()).List(ctx)
		if err != nil {
			return err
		}
		for _, s := range list {
			if strings.HasPrefix(s.Name, prefix) {
				out = append(out, s.Name+"\t"+s.Cron)
			}
		}
		return nil
	})
	return out, cobra.ShellCompDirectiveNoFileComp
}

// withCompletionClient connects as the command line would and runs fn;
// a failure only means no suggestions (cobra logs it for debugging).
func (c cli) withCompletionClient(cmd *cobra.Command, fn func(context.Context, *client.Client) error) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	cl, closeFn, err := c.connect(ctx)
	if err == nil {
		defer closeFn()
		err = fn(ctx, cl)
	}
	if err != nil {
		cobra.CompDebugln("sandrun: no suggestions: "+err.Error(), true)
	}
}
