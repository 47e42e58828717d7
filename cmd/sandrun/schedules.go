package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// schedulesCmd is `sandrun schedules ls|add|rm|suspend|resume|trigger|history`.
func (c cli) schedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "schedules",
		Aliases: []string{"schedule"},
		Short:   "cron schedules (the schedulers watch them)",
	}
	var lsOut, histOut outputFlag
	ls := c.catalogCmd("ls", "list the schedules with their next and last firing", argsUsage(0, 0, "no arguments"),
		func(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, _ []string) error {
			return c.schedulesLs(ctx, cl, cat, lsOut)
		})
	ls.Aliases = []string{"list"}
	lsOut.register(ls)
	add := c.catalogCmd("add FILE|-", "save the schedules of a YAML file (or stdin)", argsUsage(1, 1, "a schedules file (or - for stdin)"),
		func(ctx context.Context, _ *client.Client, cat *scheduler.Catalog, args []string) error {
			var data []byte
			var err error
			if args[0] == "-" {
				data, err = io.ReadAll(c.stdin)
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return err
			}
			toAdd, err := scheduler.DecodeFile(data)
			if err != nil {
				return err
			}
			for _, s := range toAdd {
				if err := cat.Put(ctx, s, false); err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "%s saved\n", s.Name)
			}
			return nil
		})
	add.ValidArgsFunction = nil
	cmd.AddCommand(ls, add)
	for _, verb := range []struct{ name, short string }{
		{"rm", "delete a schedule"},
		{"suspend", "stop a schedule firing (its slots are skipped, not made up)"},
		{"resume", "let a suspended schedule fire again"},
	} {
		cmd.AddCommand(c.catalogCmd(verb.name+" NAME", verb.short, argsUsage(1, 1, "exactly one schedule name"),
			func(ctx context.Context, _ *client.Client, cat *scheduler.Catalog, args []string) error {
				var err error
				if verb.name == "rm" {
					err = cat.Remove(ctx, args[0])
				} else {
					err = cat.SetSuspended(ctx, args[0], verb.name == "suspend")
				}
				if err == nil {
					fmt.Fprintf(c.stdout, "%s: %s done\n", args[0], verb.name)
				}
				return err
			}))
	}
	trigger := c.catalogCmd("trigger NAME", "fire a schedule now (prints the job id)", argsUsage(1, 1, "exactly one schedule name"),
		func(ctx context.Context, _ *client.Client, cat *scheduler.Catalog, args []string) error {
			id, err := cat.Trigger(ctx, args[0])
			if err == nil {
				fmt.Fprintln(c.stdout, id)
			}
			return err
		})
	history := c.catalogCmd("history NAME", "a schedule's recent firings and their jobs' states", argsUsage(1, 1, "exactly one schedule name"),
		func(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, args []string) error {
			return c.schedulesHistory(ctx, cl, cat, args[0], histOut)
		})
	histOut.register(history)
	cmd.AddCommand(trigger, history)
	return cmd
}

// catalogCmd is a schedules command: run gets the connected catalog.
func (c cli) catalogCmd(use, short string, args cobra.PositionalArgs,
	run func(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, args []string) error) *cobra.Command {
	return &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              args,
		ValidArgsFunction: c.completeSchedules,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeFn, err := c.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			return run(cmd.Context(), cl, scheduler.NewCatalog(cl.Store()), args)
		},
	}
}

type scheduleRow struct {
	scheduler.Schedule
	Next      time.Time `json:"next,omitzero"`
	LastSlot  time.Time `json:"last_slot,omitzero"`
	LastJob   string    `json:"last_job,omitempty"`
	LastState string    `json:"last_state,omitempty"`
	Missed    int64     `json:"missed"`
}

func (c cli) schedulesLs(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, out outputFlag) error {
	list, err := cat.List(ctx)
	if err != nil {
		return err
	}
	rows := make([]scheduleRow, 0, len(list))
	for _, s := range list {
		st, err := cat.State(ctx, s.Name)
		if err != nil {
			return err
		}
		row := scheduleRow{Schedule: s, LastSlot: st.LastSlot, LastJob: st.LastJob, Missed: st.Missed}
		if next, err := scheduler.NextSlot(s, time.Now()); err == nil && !s.Suspended {
			row.Next = next
		}
		if st.LastJob != "" {
			if js, err := cl.Status(ctx, st.LastJob); err == nil {
				row.LastState = string(js.State())
			} else if !errors.Is(err, context.Canceled) {
				row.LastState = "unknown"
			}
		}
		rows = append(rows, row)
	}
	return c.emit(out, rows, func(t *table) {
		t.header("NAME", "CRON", "NEXT", "LAST JOB", "STATE", "MISSED", "SUSPENDED")
		for _, r := range rows {
			next := "-"
			if !r.Next.IsZero() {
				next = r.Next.Format("01-02 15:04:05 MST")
			}
			t.row(r.Name, r.Cron, next, dash(r.LastJob), dash(r.LastState), fmt.Sprint(r.Missed), fmt.Sprint(r.Suspended))
		}
	})
}

func (c cli) schedulesHistory(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, name string, out outputFlag) error {
	if _, err := cat.Get(ctx, name); err != nil {
		return err
	}
	st, err := cat.State(ctx, name)
	if err != nil {
		return err
	}
	type row struct {
		scheduler.Fire
		State string `json:"state,omitempty"`
	}
	rows := make([]row, 0, len(st.History))
	for _, f := range st.History {
		r := row{Fire: f}
		if f.JobID != "" {
			if js, err := cl.Status(ctx, f.JobID); err == nil {
				r.State = string(js.State())
			}
		}
		rows = append(rows, r)
	}
	return c.emit(out, rows, func(t *table) {
		t.header("SLOT", "KIND", "JOB", "STATE", "REASON")
		for _, r := range rows {
			t.row(r.Slot.UTC().Format(time.RFC3339), string(r.Kind), dash(r.JobID), dash(r.State), r.Reason)
		}
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
