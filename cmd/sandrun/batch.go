package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// batchCmd is `sandrun batch submit|status|wait|results|retry|cancel`.
func (c cli) batchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "batch", Short: "many jobs as one batch: submit, follow, collect"}
	cmd.AddCommand(c.batchSubmitCmd())
	var out outputFlag
	status := c.batchIDCmd("status ID", "print a batch's progress", func(ctx context.Context, cl *client.Client, id string) error {
		p, err := cl.BatchStatus(ctx, id)
		if err != nil {
			return err
		}
		return c.emit(out, p, func(t *table) { t.row(progressLine(p)) })
	})
	out.register(status)
	var interval time.Duration
	wait := c.batchIDCmd("wait ID", "follow a batch until every item has ended", func(ctx context.Context, cl *client.Client, id string) error {
		return c.batchWait(ctx, cl, id, interval)
	})
	wait.Flags().DurationVar(&interval, "interval", 0, "progress interval (default 500ms on a terminal, 2s otherwise)")
	var (
		format      string
		from, limit int
	)
	results := c.batchIDCmd("results ID", "print every item's result (JSON lines or CSV)", func(ctx context.Context, cl *client.Client, id string) error {
		if format != "jsonl" && format != "csv" {
			return usageErr("--format %q: want jsonl or csv", format)
		}
		if limit < 0 || from < 0 || (from > 0 && limit == 0) {
			return usageErr("--limit must be >= 1 with --from, and neither negative")
		}
		if limit > 0 {
			v, next, err := cl.BatchPage(ctx, id, from, limit)
			if err != nil {
				return err
			}
			if next >= 0 {
				fmt.Fprintf(c.stderr, "more: sandrun batch results %s --from %d --limit %d\n", id, next, limit)
			}
			return writeResults(c.stdout, v, format)
		}
		v, err := cl.Batch(ctx, id)
		if err != nil {
			return err
		}
		return writeResults(c.stdout, v, format)
	})
	results.Flags().StringVar(&format, "format", "jsonl", "jsonl or csv")
	results.Flags().IntVar(&from, "from", 0, "with --limit: the first item's index")
	results.Flags().IntVar(&limit, "limit", 0, "at most this many items, from --from (0: every item, read in one pass)")
	var failed bool
	retry := c.batchIDCmd("retry ID --failed", "run again the items that failed, timed out, died or were canceled", func(ctx context.Context, cl *client.Client, id string) error {
		if !failed {
			return usageErr("batch retry ID --failed")
		}
		k, err := cl.RetryFailed(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%d item(s) run again\n", k)
		return nil
	})
	retry.Flags().BoolVar(&failed, "failed", false, "run again the items that failed, timed out, died or were canceled")
	cancel := c.batchIDCmd("cancel ID", "stop every item of a batch", func(ctx context.Context, cl *client.Client, id string) error {
		k, err := cl.CancelBatch(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%d item(s) asked to stop\n", k)
		return nil
	})
	cmd.AddCommand(status, wait, results, retry, cancel)
	return cmd
}

// batchIDCmd is a batch command on one batch ID.
func (c cli) batchIDCmd(use, short string, run func(ctx context.Context, cl *client.Client, id string) error) *cobra.Command {
	return c.idCmd(use, short, "exactly one batch id", run)
}

func (c cli) batchSubmitCmd() *cobra.Command {
	var (
		id, queue, backend, timeout, approval, origin, tmpl, params string
		maxAttempts, inFlight, maxParallel                          int
		labels                                                      []string
	)
	cmd := &cobra.Command{
		Use:   "submit FILE.jsonl... | --template SPEC --params FILE.jsonl",
		Short: "submit many jobs as one batch (prints the batch id)",
		Example: `  sandrun batch submit examples/items.jsonl
  sandrun batch submit --template examples/eval.yaml --params examples/cases.jsonl --max-parallel 64`,
		RunE: func(cmd *cobra.Command, positional []string) error {
			ctx := cmd.Context()
			flags := cmd.Flags()
			if flags.Changed("max-attempts") && (maxAttempts < 1 || maxAttempts > jobs.MaxAttemptsCap) {
				return usageErr("--max-attempts: must be 1..%d, got %d", jobs.MaxAttemptsCap, maxAttempts)
			}
			if !flags.Changed("max-attempts") {
				maxAttempts = 0 // each item's own, else the default
			}
			if inFlight < 1 {
				return usageErr("--in-flight: must be at least 1, got %d", inFlight)
			}
			if maxParallel < 0 {
				return usageErr("--max-parallel: must be 0 (no bound) or more, got %d", maxParallel)
			}
			var itemTimeout jobs.Duration
			if flags.Changed("timeout") {
				if err := itemTimeout.UnmarshalJSON([]byte(strconv.Quote(timeout))); err != nil {
					return usageErr("--timeout: %v", err)
				}
				if itemTimeout <= 0 || itemTimeout.D() > jobs.MaxTimeout {
					return usageErr("--timeout: must be > 0 and <= %s, got %s", jobs.MaxTimeout, timeout)
				}
			}
			if queue == "" {
				queue = c.conn.queue()
			}
			items, derived, err := batchItems(positional, tmpl, params)
			if err != nil {
				return err
			}
			for i := range items {
				it := &items[i]
				it.Queue = orDefault(it.Queue, queue)
				it.Backend = orDefault(it.Backend, backend)
				if it.MaxAttempts == 0 {
					it.MaxAttempts = maxAttempts
				}
				if approval != "" {
					it.Approval = approval
				}
				if origin != "" {
					it.Origin = jobs.Origin(origin)
				}
				if it.Timeout == 0 {
					it.Timeout = itemTimeout
				}
			}
			var lm map[string]string
			if err := addKV(&lm, labels, "--label"); err != nil {
				return err
			}
			if id == "" {
				id = derived
			}
			cl, closeFn, err := c.connect(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			began := time.Now()
			res, err := cl.SubmitBatch(ctx, client.BatchOptions{ID: id, Labels: lm, InFlight: inFlight, MaxParallel: maxParallel}, items)
			if err != nil {
				return err
			}
			c.warnPlacement(ctx, cl, items[0].WithDefaults().Queue, items[0].WithDefaults().Backend)
			fmt.Fprintln(c.stdout, id)
			fmt.Fprintf(c.stderr, "batch %s: %d items (%d new, %d already submitted) in %s\n", id, res.Batch.Total, res.Submitted, res.Existing,
				time.Since(began).Round(time.Millisecond))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&id, "id", "", "batch id (default: derived from the input, so the same input is the same batch)")
	fs.StringVar(&queue, "queue", "", "queue of items that name none (default: the context's, else \"default\")")
	fs.StringVar(&backend, "backend", "", "backend profile of items that name none")
	fs.StringVar(&timeout, "timeout", "", "timeout of items that set none, e.g. 10m")
	fs.IntVar(&maxAttempts, "max-attempts", jobs.DefaultMaxAttempts, "attempts per item, for items that set none, 1 to 100")
	fs.StringVar(&approval, "approval", "", "approval mode of every item: deny, approve or allowlist")
	fs.StringVar(&origin, "origin", "", "origin of every item (default batch; subagent batches are denied by default)")
	fs.StringVar(&tmpl, "template", "", "item template (a job spec, JSON or YAML, using {{.index}} and the params' fields)")
	fs.StringVar(&params, "params", "", "with --template: one JSON object of fields per line, one item each")
	fs.IntVar(&inFlight, "in-flight", 4096, "writes awaiting JetStream's acknowledgement at once")
	fs.IntVar(&maxParallel, "max-parallel", 0, "items running at once across all workers (0: no bound)")
	fs.StringArrayVar(&labels, "label", nil, "K=V label on every item (repeatable)")
	return cmd
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// batchItems reads the items: a JSONL file of job specs (or stdin for
// "-"), or a template and a JSONL file of fields. It also returns a batch
// ID derived from the input.
func batchItems(files []string, tmplFile, paramsFile string) ([]jobs.Spec, string, error) {
	h := sha256.New()
	if tmplFile != "" {
		if len(files) != 0 || paramsFile == "" {
			return nil, "", usageErr("--template needs --params and no FILE")
		}
		tdata, err := os.ReadFile(tmplFile)
		if err != nil {
			return nil, "", err
		}
		base, err := jobs.DecodeFile(tmplFile, bytes.NewReader(tdata))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", tmplFile, err)
		}
		pdata, err := os.ReadFile(paramsFile)
		if err != nil {
			return nil, "", err
		}
		h.Write(tdata)
		h.Write(pdata)
		var items []jobs.Spec
		err = eachLine(pdata, func(n int, line []byte) error {
			fields := map[string]any{}
			if err := json.Unmarshal(line, &fields); err != nil {
				return fmt.Errorf("%s:%d: %w", paramsFile, n, err)
			}
			fields["index"] = len(items)
			it, err := expand(base, fields)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", paramsFile, n, err)
			}
			items = append(items, it)
			return nil
		})
		return items, derivedID(h.Sum(nil)), err
	}
	if len(files) != 1 {
		return nil, "", usageErr("batch submit FILE.jsonl (- for stdin), or --template SPEC --params FILE.jsonl")
	}
	var data []byte
	var err error
	if files[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(files[0])
	}
	if err != nil {
		return nil, "", err
	}
	h.Write(data)
	var items []jobs.Spec
	err = eachLine(data, func(n int, line []byte) error {
		s, err := jobs.DecodeJSON(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", files[0], n, err)
		}
		items = append(items, s)
		return nil
	})
	return items, derivedID(h.Sum(nil)), err
}

func derivedID(sum []byte) string { return "b" + hex.EncodeToString(sum[:8]) }

// eachLine calls f with each non-blank line of data and its number.
func eachLine(data []byte, f func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if err := f(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// expand fills a template spec's command, cwd, env values and image with
// fields.
func expand(base jobs.Spec, fields map[string]any) (jobs.Spec, error) {
	s := base
	s.Env, s.Labels = maps.Clone(base.Env), maps.Clone(base.Labels)
	if base.Container != nil {
		c := *base.Container
		s.Container = &c
	}
	render := func(what, text string) (string, error) {
		t, err := template.New(what).Option("missingkey=error").Parse(text)
		if err != nil {
			return "", fmt.Errorf("template %s: %w", what, err)
		}
		var b strings.Builder
		if err := t.Execute(&b, fields); err != nil {
			return "", fmt.Errorf("template %s: %w", what, err)
		}
		return b.String(), nil
	}
	var err error
	if s.Command, err = render("command", s.Command); err != nil {
		return s, err
	}
	if s.Cwd, err = render("cwd", s.Cwd); err != nil {
		return s, err
	}
	for k, v := range s.Env {
		if s.Env[k], err = render("env."+k, v); err != nil {
			return s, err
		}
	}
	if s.Container != nil && s.Container.Image != "" {
		if s.Container.Image, err = render("container.image", s.Container.Image); err != nil {
			return s, err
		}
	}
	return s, nil
}

// progressLine is the one-line form of p.
func progressLine(p client.BatchProgress) string {
	var parts []string
	for _, st := range []jobs.State{jobs.StateSucceeded, jobs.StateFailed, jobs.StateTimedOut, jobs.StateDenied, jobs.StateCanceled, jobs.StateDead} {
		if n := p.Counts[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	s := fmt.Sprintf("batch %s: %d/%d done", p.ID, p.Done, p.Total)
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	s += fmt.Sprintf(", %d running, %.1f/s", p.Running, p.PerSecond)
	if p.ETA > 0 {
		s += ", ETA " + p.ETA.String()
	}
	if p.Expired > 0 {
		s += fmt.Sprintf("; %d items' records expired (counts as the batch completed)", p.Expired)
	}
	return s
}

// progressBar is the terminal form of p: a bar of done items (failed ones
// marked x) and the line.
func progressBar(p client.BatchProgress, width int) string {
	done, bad := 0, 0
	if p.Total > 0 {
		done = p.Done * width / p.Total
		bad = min(done, (p.Done-p.Counts[jobs.StateSucceeded])*width/p.Total)
	}
	return "[" + strings.Repeat("#", done-bad) + strings.Repeat("x", bad) + strings.Repeat(".", width-done) + "] " + progressLine(p)
}

// batchWait follows a batch until every item has ended: a bar redrawn in
// place on a terminal, a line every interval otherwise. Interrupted and
// started again, it picks up from the batch's state. It exits 1 when an
// item did not succeed.
func (c cli) batchWait(ctx context.Context, cl *client.Client, id string, interval time.Duration) error {
	tty := isTerminal(c.stdout)
	if interval <= 0 {
		interval = 2 * time.Second
		if tty {
			interval = 200 * time.Millisecond
		}
	}
	show := func(p client.BatchProgress) {
		if tty {
			fmt.Fprintf(c.stdout, "\r\x1b[K%s", progressBar(p, 30))
		} else {
			fmt.Fprintln(c.stdout, progressLine(p))
		}
	}
	p, err := cl.WaitBatch(ctx, id, client.WaitOptions{OnProgress: show, Interval: interval})
	if tty {
		fmt.Fprintln(c.stdout)
	}
	if err != nil {
		return err
	}
	if !p.Succeeded() {
		return exitError{code: 1}
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// resultRow is one item in `batch results`.
type resultRow struct {
	Index       int     `json:"index"`
	ID          string  `json:"id"`
	Status      string  `json:"status"`
	ExitCode    *int    `json:"exit_code"`
	WallSeconds float64 `json:"wall_seconds"`
	Attempts    int     `json:"attempts"`
	Output      string  `json:"output"`
	OutputRef   string  `json:"output_ref,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// writeResults prints one row per item, in index order.
func writeResults(w io.Writer, v client.BatchView, format string) error {
	rows := make([]resultRow, 0, len(v.Items))
	for _, it := range v.Items {
		row := resultRow{Index: it.Index, ID: it.Run.Spec.ID, Status: string(it.State()), Attempts: it.Run.Attempt}
		if r := it.Result; r != nil {
			code := r.ExitCode
			row.ExitCode, row.WallSeconds, row.Attempts, row.Error = &code, r.WallSeconds, r.Attempt, r.Error
			row.Output = r.Stdout.Head
			if len(row.Output) > 200 {
				row.Output = row.Output[:200]
			}
			row.OutputRef = cmp.Or(r.Stdout.Subject, r.Stdout.Object)
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b resultRow) int { return a.Index - b.Index })
	switch format {
	case "jsonl":
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case "csv":
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"index", "id", "status", "exit_code", "wall_seconds", "attempts", "output", "output_ref", "error"})
		for _, r := range rows {
			code := ""
			if r.ExitCode != nil {
				code = strconv.Itoa(*r.ExitCode)
			}
			_ = cw.Write([]string{strconv.Itoa(r.Index), r.ID, r.Status, code, strconv.FormatFloat(r.WallSeconds, 'f', 3, 64),
				strconv.Itoa(r.Attempts), r.Output, r.OutputRef, r.Error})
		}
		cw.Flush()
		return cw.Error()
	}
	return usageErr("--format: %q: want jsonl or csv", format)
}
