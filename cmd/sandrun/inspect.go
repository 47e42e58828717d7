package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/jobs"
)

func oneID(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", usageErr("want exactly one job id, e.g. sandrun %s 01J...", what)
	}
	return args[0], nil
}

// withJob parses a one-job command's flags (those setup adds, plus the
// connection flags), connects, and runs fn on the job ID.
func (c cli) withJob(ctx context.Context, name string, args []string, setup func(*flag.FlagSet),
	fn func(cl *client.Client, id string) error) error {
	var n app.NATSConfig
	fs := c.flags(name, &n)
	if setup != nil {
		setup(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	id, err := oneID(fs.Args(), name)
	if err != nil {
		return err
	}
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(cl, id)
}

func (c cli) status(ctx context.Context, args []string) error {
	var asJSON *bool
	setup := func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print the record and result as JSON (stable for scripts)")
	}
	return c.withJob(ctx, "status", args, setup, func(cl *client.Client, id string) error {
		return c.printStatus(ctx, cl, id, *asJSON)
	})
}

func (c cli) printStatus(ctx context.Context, cl *client.Client, id string, asJSON bool) error {
	st, err := cl.Status(ctx, id)
	if errors.Is(err, jobs.ErrExpired) {
		return fmt.Errorf("%w (this deployment keeps %s)", err, cl.Store().Retention.String())
	}
	if errors.Is(err, jobs.ErrNotFound) {
		// Workers write a job's record when they claim it; the record
		// of a finished job goes when its retention has passed.
		if at, ok := jobs.IDTime(id); ok && time.Since(at) > cl.Store().Retention.Shortest() {
			return fmt.Errorf("%s: no record: submitted %s ago, so most likely finished and expired (this deployment keeps %s), or still queued and never claimed (%w)",
				id, time.Since(at).Round(time.Minute), cl.Store().Retention.String(), err)
		}
		return fmt.Errorf("%s: no record yet: queued and not claimed by a worker of its queue, or no such job (%w)", id, err)
	}
	if err != nil {
		return err
	}

	if asJSON {
		return writeJSON(c, statusJSON(st))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", st.Run.Spec.ID)
	fmt.Fprintf(tw, "state\t%s\n", st.State())
	fmt.Fprintf(tw, "owner\t%s\n", st.Run.OwnerString())
	fmt.Fprintf(tw, "queue\t%s\n", st.Run.Spec.Queue)
	fmt.Fprintf(tw, "backend\t%s\n", st.Run.Spec.Backend)
	fmt.Fprintf(tw, "command\t%s\n", st.Run.Spec.Command)
	fmt.Fprintf(tw, "attempts\t%d of %d\n", st.Run.Attempt, st.Run.Spec.MaxAttempts)
	if st.Run.Worker != "" {
		fmt.Fprintf(tw, "worker\t%s\n", st.Run.Worker)
	}
	if !st.Run.NextAttemptAt.IsZero() {
		fmt.Fprintf(tw, "next attempt\t%s\n", st.Run.NextAttemptAt.Format(time.RFC3339))
	}
	if st.Run.LastError != "" {
		fmt.Fprintf(tw, "last error\t%s\n", st.Run.LastError)
	}
	if r := st.Result; r != nil {
		fmt.Fprintf(tw, "exit code\t%d\n", r.ExitCode)
		if r.Signal != "" {
			fmt.Fprintf(tw, "signal\t%s\n", r.Signal)
		}
		if r.Rule != "" {
			fmt.Fprintf(tw, "policy rule\t%s\n", r.Rule)
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "error\t%s\n", r.Error)
		}
		fmt.Fprintf(tw, "wall\t%.3fs\n", r.WallSeconds)
		fmt.Fprintf(tw, "cpu\tuser %.3fs sys %.3fs\n", r.UserCPUSeconds, r.SysCPUSeconds)
		if r.MaxRSSBytes > 0 {
			fmt.Fprintf(tw, "peak rss\t%d KiB\n", r.MaxRSSBytes>>10)
		}
		fmt.Fprintf(tw, "output\tstdout %d bytes, stderr %d bytes\n", r.Stdout.Size, r.Stderr.Size)
	}
	return tw.Flush()
}

// statusJSON is the stable --json shape of status and ls.
type statusOut struct {
	ID          string            `json:"id"`
	State       jobs.State        `json:"state"`
	Queue       string            `json:"queue"`
	Backend     string            `json:"backend"`
	Command     string            `json:"command"`
	Attempt     int               `json:"attempt"`
	MaxAttempts int               `json:"max_attempts"`
	Labels      map[string]string `json:"labels,omitempty"`
	LastError   string            `json:"last_error,omitempty"`
	Spec        jobs.Spec         `json:"spec"`
	Result      *jobs.Result      `json:"result,omitempty"`
}

func statusJSON(st client.Status) statusOut {
	return statusOut{
		ID: st.Run.Spec.ID, State: st.State(), Queue: st.Run.Spec.Queue, Backend: st.Run.Spec.Backend,
		Command: st.Run.Spec.Command, Attempt: st.Run.Attempt, MaxAttempts: st.Run.Spec.MaxAttempts,
		Labels: st.Run.Spec.Labels, LastError: st.Run.LastError, Spec: st.Run.Spec, Result: st.Result,
	}
}

func writeJSON(c cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c cli) ls(ctx context.Context, args []string) error {
	var n app.NATSConfig
	fs := c.flags("ls", &n)
	state := fs.String("state", "", "only jobs in this state")
	queue := fs.String("queue", "", "only jobs of this queue")
	limit := fs.Int("limit", 100, "at most this many jobs, most recently changed first")
	cont := fs.String("continue", "", "the page after the one that printed this token")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *limit < 1 {
		return usageErr("--limit: must be at least 1, got %d", *limit)
	}
	f := client.ListFilter{Queue: *queue, Limit: *limit, Continue: *cont}
	if *state != "" {
		s, err := jobs.ParseState(*state)
		if err != nil {
			return usageErr("--state: %v", err)
		}
		f.State = s
	}
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	page, err := cl.ListPage(ctx, f)
	if err != nil {
		return err
	}
	list := page.Jobs
	if page.Next != "" {
		fmt.Fprintf(c.stderr, "more: sandrun ls --continue %s (with the same filters)\n", page.Next)
	}
	if *asJSON {
		out := make([]statusOut, 0, len(list))
		for _, st := range list {
			out = append(out, statusJSON(st))
		}
		return writeJSON(c, out)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tBACKEND\tATTEMPT\tCOMMAND")
	for _, st := range list {
		cmd := st.Run.Spec.Command
		if len(cmd) > 50 {
			cmd = cmd[:47] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\n", st.Run.Spec.ID, st.State(), st.Run.Spec.Queue,
			st.Run.Spec.Backend, st.Run.Attempt, st.Run.Spec.MaxAttempts, cmd)
	}
	return tw.Flush()
}

func (c cli) logs(ctx context.Context, args []string) error {
	var follow *bool
	setup := func(fs *flag.FlagSet) { follow = fs.Bool("f", false, "follow the live output until the job ends") }
	return c.withJob(ctx, "logs", args, setup, func(cl *client.Client, id string) error {
		st, err := cl.Status(ctx, id)
		if err != nil {
			return err
		}
		if st.Result != nil {
			return cl.Output(ctx, *st.Result, c.stdout, c.stderr)
		}
		if !*follow {
			return fmt.Errorf("job %s is %s: no output stored yet (use -f to follow it)", id, st.State())
		}
		_, err = cl.Follow(ctx, id, client.FollowOptions{Stdout: c.stdout, Stderr: c.stderr})
		return err
	})
}

func (c cli) cancel(ctx context.Context, args []string) error {
	return c.withJob(ctx, "cancel", args, nil, func(cl *client.Client, id string) error {
		out, err := cl.Cancel(ctx, id)
		if err != nil {
			return err
		}
		switch out {
		case client.CancelRequested:
			// Workers act on the request: wait a little to say how it ended.
			wctx, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			if r, err := cl.Wait(wctx, id); err == nil {
				fmt.Fprintf(c.stdout, "%s %s\n", id, r.State)
				return nil
			}
			fmt.Fprintf(c.stdout, "%s: cancel requested; a worker will stop it (or end it when it is claimed)\n", id)
		case client.CancelTooLate:
			st, _ := cl.Status(ctx, id)
			return fmt.Errorf("%s already ended (%s)", id, st.State())
		}
		return nil
	})
}

func (c cli) dlq(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErr("want `dlq ls` or `dlq retry ID`")
	}
	var n app.NATSConfig
	fs := c.flags("dlq "+args[0], &n)
	asJSON := fs.Bool("json", false, "JSON output (dlq ls)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	switch args[0] {
	case "ls":
		list, err := cl.DLQ(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if list == nil {
				list = []jobs.DLQEntry{}
			}
			return writeJSON(c, list)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tQUEUE\tATTEMPTS\tTIME\tREASON")
		for _, e := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.JobID, e.Queue, e.Attempts, e.Time.Format(time.RFC3339), e.Reason)
		}
		return tw.Flush()
	case "retry":
		id, err := oneID(fs.Args(), "dlq retry")
		if err != nil {
			return err
		}
		if err := cl.RetryDLQ(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s requeued\n", id)
		return nil
	}
	return usageErr("unknown dlq command %q (want ls or retry)", args[0])
}
