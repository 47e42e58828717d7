package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// schedules handles `sandrun schedules ls|add|rm|suspend|resume|trigger|history`.
func (c cli) schedules(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErr("want schedules ls | add FILE|- | rm NAME | suspend NAME | resume NAME | trigger NAME | history NAME")
	}
	sub := args[0]
	var n app.NATSConfig
	fs := c.flags("schedules "+sub, &n)
	asJSON := fs.Bool("json", false, "JSON output (ls, history)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rest := fs.Args()
	needName := func() (string, error) {
		if len(rest) != 1 {
			return "", usageErr("want exactly one schedule name, e.g. sandrun schedules %s nightly", sub)
		}
		return rest[0], nil
	}
	// Validate files before connecting.
	var toAdd []scheduler.Schedule
	if sub == "add" {
		if len(rest) != 1 {
			return usageErr("want a schedules file (or - for stdin)")
		}
		var data []byte
		var err error
		if rest[0] == "-" {
			data, err = io.ReadAll(c.stdin)
		} else {
			data, err = os.ReadFile(rest[0])
		}
		if err != nil {
			return err
		}
		if toAdd, err = scheduler.DecodeFile(data); err != nil {
			return err
		}
	}
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	cat := scheduler.NewCatalog(cl.Store())
	switch sub {
	case "ls":
		return c.schedulesLs(ctx, cl, cat, *asJSON)
	case "add":
		for _, s := range toAdd {
			if err := cat.Put(ctx, s, false); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s saved\n", s.Name)
		}
		return nil
	case "rm", "suspend", "resume", "trigger", "history":
		name, err := needName()
		if err != nil {
			return err
		}
		switch sub {
		case "rm":
			err = cat.Remove(ctx, name)
		case "suspend", "resume":
			err = cat.SetSuspended(ctx, name, sub == "suspend")
		case "trigger":
			var id string
			if id, err = cat.Trigger(ctx, name); err == nil {
				fmt.Fprintln(c.stdout, id)
				return nil
			}
		case "history":
			return c.schedulesHistory(ctx, cl, cat, name, *asJSON)
		}
		if err == nil {
			fmt.Fprintf(c.stdout, "%s: %s done\n", name, sub)
		}
		return err
	}
	return usageErr("unknown schedules command %q", sub)
}

type scheduleRow struct {
	scheduler.Schedule
	Next      time.Time `json:"next,omitzero"`
	LastSlot  time.Time `json:"last_slot,omitzero"`
	LastJob   string    `json:"last_job,omitempty"`
	LastState string    `json:"last_state,omitempty"`
	Missed    int64     `json:"missed"`
}

func (c cli) schedulesLs(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, asJSON bool) error {
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
	if asJSON {
		return writeJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tZONE\tNEXT (zone time)\tLAST SLOT\tLAST JOB\tLAST STATE\tMISSED\tSUSPENDED")
	for _, r := range rows {
		zone := r.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		next := "-"
		if !r.Next.IsZero() {
			next = r.Next.Format("2006-01-02 15:04:05 MST")
		}
		last := "-"
		if !r.LastSlot.IsZero() {
			last = r.LastSlot.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%v\n", r.Name, r.Cron, zone, next, last, dash(r.LastJob), dash(r.LastState), r.Missed, r.Suspended)
	}
	return tw.Flush()
}

func (c cli) schedulesHistory(ctx context.Context, cl *client.Client, cat *scheduler.Catalog, name string, asJSON bool) error {
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
	if asJSON {
		return writeJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tKIND\tJOB\tSTATE\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Slot.UTC().Format(time.RFC3339), r.Kind, dash(r.JobID), dash(r.State), r.Reason)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
