package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// jobCmd is a command on one job ID; run gets the connected client.
func (c cli) jobCmd(use, short string, run func(ctx context.Context, cl *client.Client, id string) error) *cobra.Command {
	cmd := c.idCmd(use, short, "exactly one job id, e.g. 01JB...", run)
	cmd.ValidArgsFunction = c.completeJobIDs
	return cmd
}

// idCmd is a command on one ID (want says which): run gets the connected
// client.
func (c cli) idCmd(use, short, want string, run func(ctx context.Context, cl *client.Client, id string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  argsUsage(1, 1, want),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, closeFn, err := c.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			return run(cmd.Context(), cl, args[0])
		},
	}
}

func (c cli) statusCmd() *cobra.Command {
	var out outputFlag
	cmd := c.jobCmd("status ID", "show a job's record and result", func(ctx context.Context, cl *client.Client, id string) error {
		return c.printStatus(ctx, cl, id, out)
	})
	cmd.Example = "  sandrun status ID -o json"
	out.register(cmd)
	return cmd
}

func (c cli) printStatus(ctx context.Context, cl *client.Client, id string, out outputFlag) error {
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

	return c.emit(out, statusJSON(st), func(t *table) {
		t.row("id", st.Run.Spec.ID)
		t.row("state", string(st.State()))
		t.row("owner", st.Run.OwnerString())
		t.row("queue", st.Run.Spec.Queue)
		t.row("backend", st.Run.Spec.Backend)
		t.row("command", st.Run.Spec.Command)
		t.row("attempts", fmt.Sprintf("%d of %d", st.Run.Attempt, st.Run.Spec.MaxAttempts))
		if st.Run.Worker != "" {
			t.row("worker", st.Run.Worker)
		}
		if !st.Run.NextAttemptAt.IsZero() {
			t.row("next attempt", st.Run.NextAttemptAt.Format(time.RFC3339))
		}
		if st.Run.LastError != "" {
			t.row("last error", st.Run.LastError)
		}
		if r := st.Result; r != nil {
			t.row("exit code", fmt.Sprint(r.ExitCode))
			if r.Signal != "" {
				t.row("signal", r.Signal)
			}
			if r.Rule != "" {
				t.row("policy rule", r.Rule)
			}
			if r.Error != "" {
				t.row("error", r.Error)
			}
			t.row("wall", fmt.Sprintf("%.3fs", r.WallSeconds))
			t.row("cpu", fmt.Sprintf("user %.3fs sys %.3fs", r.UserCPUSeconds, r.SysCPUSeconds))
			if r.MaxRSSBytes > 0 {
				t.row("peak rss", fmt.Sprintf("%d KiB", r.MaxRSSBytes>>10))
			}
			t.row("output", fmt.Sprintf("stdout %d bytes, stderr %d bytes", r.Stdout.Size, r.Stderr.Size))
		}
	})
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

func (c cli) lsCmd() *cobra.Command {
	var (
		out                outputFlag
		state, queue, cont string
		limit              int
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "list jobs, most recently changed first",
		Example: "  sandrun ls --state failed --queue default",
		Args:    argsUsage(0, 0, "no arguments (filters are flags)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if limit < 1 {
				return usageErr("--limit: must be at least 1, got %d", limit)
			}
			if _, err := out.kind(); err != nil {
				return err
			}
			f := client.ListFilter{Queue: queue, Limit: limit, Continue: cont}
			if state != "" {
				s, err := jobs.ParseState(state)
				if err != nil {
					return usageErr("--state: %v", err)
				}
				f.State = s
			}
			cl, closeFn, err := c.connect(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			page, err := cl.ListPage(ctx, f)
			if err != nil {
				return err
			}
			if page.Next != "" {
				fmt.Fprintf(c.stderr, "more: sandrun ls --continue %s (with the same filters)\n", page.Next)
			}
			rows := make([]statusOut, 0, len(page.Jobs))
			for _, st := range page.Jobs {
				rows = append(rows, statusJSON(st))
			}
			return c.emit(out, rows, func(t *table) {
				t.header("ID", "STATE", "QUEUE", "BACKEND", "TRY", "COMMAND")
				for _, r := range rows {
					t.row(r.ID, string(r.State), r.Queue, r.Backend, fmt.Sprintf("%d/%d", r.Attempt, r.MaxAttempts), r.Command)
				}
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only jobs in this state (queued, running, succeeded, failed, ...)")
	cmd.Flags().StringVar(&queue, "queue", "", "only jobs of this queue")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs")
	cmd.Flags().StringVar(&cont, "continue", "", "the page after the one that printed this token")
	out.register(cmd)
	return cmd
}

func (c cli) logsCmd() *cobra.Command {
	var follow bool
	cmd := c.jobCmd("logs ID", "print a job's output (-f: follow it live)", func(ctx context.Context, cl *client.Client, id string) error {
		st, err := cl.Status(ctx, id)
		if follow && errors.Is(err, jobs.ErrNotFound) && !errors.Is(err, jobs.ErrExpired) {
			// a job no worker has claimed yet has no record: follow it
			// from its first event, as tail -F waits for a file
			fmt.Fprintf(c.stderr, "sandrun logs: %s is not claimed yet (or does not exist); waiting for it\n", id)
			_, err = cl.Follow(ctx, id, client.FollowOptions{Stdout: c.stdout, Stderr: c.stderr})
			return err
		}
		if err != nil {
			return err
		}
		if st.Result != nil {
			return cl.Output(ctx, *st.Result, c.stdout, c.stderr)
		}
		if !follow {
			return fmt.Errorf("job %s is %s: no output stored yet (use -f to follow it)", id, st.State())
		}
		_, err = cl.Follow(ctx, id, client.FollowOptions{Stdout: c.stdout, Stderr: c.stderr})
		return err
	})
	cmd.Example = "  sandrun logs -f ID"
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the live output until the job ends")
	return cmd
}

func (c cli) cancelCmd() *cobra.Command {
	return c.jobCmd("cancel ID", "cancel a queued or running job", func(ctx context.Context, cl *client.Client, id string) error {
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

func (c cli) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "the dead-letter queue: jobs that used up their attempts"}
	var out outputFlag
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list dead jobs",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := out.kind(); err != nil {
				return err
			}
			cl, closeFn, err := c.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			list, err := cl.DLQ(cmd.Context())
			if err != nil {
				return err
			}
			if list == nil {
				list = []jobs.DLQEntry{}
			}
			return c.emit(out, list, func(t *table) {
				t.header("ID", "QUEUE", "TRIES", "TIME", "REASON")
				for _, e := range list {
					t.row(e.JobID, e.Queue, fmt.Sprint(e.Attempts), e.Time.UTC().Format(time.RFC3339), e.Reason)
				}
			})
		},
	}
	out.register(ls)
	retry := c.jobCmd("retry ID", "run a dead job again", func(ctx context.Context, cl *client.Client, id string) error {
		if err := cl.RetryDLQ(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s requeued\n", id)
		return nil
	})
	cmd.AddCommand(ls, retry)
	return cmd
}
