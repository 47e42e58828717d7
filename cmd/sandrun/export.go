package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
)

// export writes the history of finished jobs as JSON lines, one per
// ending, so that keeping a year of results does not mean keeping a year
// of JetStream state. Written to a file, it resumes after the last line
// the file holds (a torn last line is cut off first): run it again, or
// keep it running with --follow, and every ending is written once.
func (c cli) exportCmd() *cobra.Command {
	var (
		out    string
		follow bool
		after  uint64
	)
	cmd := &cobra.Command{
		Use:   "export --out FILE|- [--follow]",
		Short: "finished jobs as JSON lines (a history that outlives retention)",
		Example: `  sandrun export --out history.jsonl       # add --follow to keep writing endings
  sandrun export --out - --after 3`,
		Args: argsUsage(0, 0, "no arguments (--out FILE|-)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.export(cmd.Context(), out, follow, after)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "JSON lines file to append to, resuming after its last line; - for standard output")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep writing endings as they happen, until interrupted")
	cmd.Flags().Uint64Var(&after, "after", 0, "with --out -: start after this sequence (a line's seq)")
	return cmd
}

func (c cli) export(ctx context.Context, out string, follow bool, after uint64) error {
	if out == "" {
		return usageErr("--out: required (a file, or - for standard output)")
	}
	w, from, finish, err := openHistory(out)
	if err != nil {
		return err
	}
	if out == "-" {
		from = after
	} else if after != 0 {
		return usageErr("--after: only with --out - (a file resumes after its own last line)")
	}
	cl, closeFn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer closeFn()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	written := 0
	flush := time.NewTicker(time.Second)
	defer flush.Stop()
	err = cl.History(ctx, from, follow, func(e client.HistoryEntry) error {
		written++
		if err := enc.Encode(e); err != nil {
			return err
		}
		select {
		case <-flush.C: // a follower's lines reach the file within a second
			return bw.Flush()
		default:
			return nil
		}
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if ferr := finish(); err == nil {
		err = ferr
	}
	fmt.Fprintf(c.stderr, "exported %d job endings\n", written)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// openHistory opens the export's output: standard output, or path for
// appending after its last whole line, and the sequence that line holds.
func openHistory(path string) (io.Writer, uint64, func() error, error) {
	if path == "-" {
		return os.Stdout, 0, func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("--out: %w", err)
	}
	last, end, err := lastLine(f)
	if err != nil {
		_ = f.Close()
		return nil, 0, nil, fmt.Errorf("--out %s: %w", path, err)
	}
	var from uint64
	if last != nil {
		var e struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(last, &e); err != nil || e.Seq == 0 {
			_ = f.Close()
			return nil, 0, nil, fmt.Errorf("--out %s: its last line is not a sandrun export line (no seq): %q", path, truncate(string(last), 80))
		}
		from = e.Seq
	}
	// A torn line (the export was killed mid-write) is cut off: it is
	// written again whole.
	if err := f.Truncate(end); err != nil {
		_ = f.Close()
		return nil, 0, nil, err
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, 0, nil, err
	}
	finish := func() error {
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}
	return f, from, finish, nil
}

// lastLine returns f's last newline-terminated line and the offset just
// past it (where whole lines end).
func lastLine(f *os.File) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	const block = 64 << 10
	var tail []byte
	for off := size; off > 0; {
		n := min(int64(block), off)
		off -= n
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, 0, err
		}
		tail = append(buf, tail...)
		end := bytes.LastIndexByte(tail, '\n')
		if end < 0 {
			continue
		}
		start := bytes.LastIndexByte(tail[:end], '\n')
		if start >= 0 || off == 0 {
			return tail[start+1 : end], off + int64(end) + 1, nil
		}
	}
	return nil, 0, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
